/**
 * The error catalogues (host/src/**\/*.errors.ts: one function per error text, named for what
 * went wrong) and the rule that no error text leaves the server with an absolute host path
 * (docs/tenancy.md "What leaves the server"): every catalogue function, called with hostile
 * arguments (absolute paths under and outside the directories the server knows, `../` paths,
 * names with control characters and quotes), gives a TritonError whose public form (the data
 * plane's contract/public-errors.ts PathScrubber.publicError) names no absolute path. Every
 * exported function of every catalogue must have a case here, so a new message cannot skip it.
 */
import { readdirSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, TritonError } from '../../host/src/contract/errors.js';
import { PathScrubber, redactAbsolutePaths, relabelledError } from '../../host/src/contract/public-errors.js';
import { PROJECT_ROOT } from '../../host/src/project.js';

const SRC = join(PROJECT_ROOT, 'host/src');
/** A model repository the scrubber knows (its paths become model-relative). */
const REPO = '/srv/models';

/** Strings a client, tenant or backend could put where a catalogue function takes a name or a path. */
const HOSTILE: readonly string[] = [
  '/srv/warden-secret/weights/model.bin',
  `${REPO}/simple/1/model.onnx`,
  '../../../etc/shadow',
  `${tmpdir()}/warden-upload-1/acme/1/model.wasm`,
  `${homedir()}/.ssh/id_rsa`,
  'm\n/etc/shadow',
  'm\u0000/opt/operator-keys/k',
  'm\u001b/var/lib/warden/state',
  'it\'s "/var/lib/x y/z"',
  '`/root/a b/c`',
  '(/usr/local/lib/libx.so)',
];
/** Texts that must not survive: absolute paths of {@link HOSTILE}, and the host's own directories. */
const LEAKS = ['/srv/', 'warden-secret', '/opt/', 'operator-keys', '/var/lib', '/root/', '/usr/local', tmpdir(), homedir()];

/** Each catalogue function's arguments for one hostile string: `'<file under host/src>#<export>'`. */
const CASES: Record<string, (h: string) => unknown[]> = {
  'dataplane/shared-memory.errors.ts#clientShmDisabled': () => [],
  'dataplane/shared-memory.errors.ts#shmKeyNotPosixName': (h) => [JSON.stringify(h).slice(1, -1)],
  'dataplane/shared-memory.errors.ts#shmKeyReservedByServer': (h) => [h, 'warden-'],
  'dataplane/shared-memory.errors.ts#shmKeyReservedByTriton': (h) => [h, h, 'triton_python_backend_shm_region_'],
  'dataplane/shared-memory.errors.ts#shmCountInvalid': (h) => [h],
  'dataplane/shared-memory.errors.ts#shmRegionNameMissing': () => ['system'],
  'dataplane/shared-memory.errors.ts#shmRegionExists': (h) => [h],
  'dataplane/shared-memory.errors.ts#shmKeyOutsideTenant': (h) => [h, 'acme.'],
  'dataplane/shared-memory.errors.ts#shmKeyTaken': (h) => [h],
  'dataplane/shared-memory.errors.ts#shmRegionCap': () => [64],
  'dataplane/shared-memory.errors.ts#shmOpenMissing': (h) => [h],
  'dataplane/shared-memory.errors.ts#shmOpenRefused': (h) => [h, h],
  'dataplane/shared-memory.errors.ts#shmRegionPastObject': (h) => [h, 0, 8, 4, h],
  'dataplane/shared-memory.errors.ts#shmRegionIsSystem': (h) => [h],
  'dataplane/shared-memory.errors.ts#shmRegionNotFound': (h) => [h, 'cuda'],
  'dataplane/shared-memory.errors.ts#shmRangeInvalid': (h) => [h],
  'dataplane/shared-memory.errors.ts#shmReadTooLarge': (h) => [h, 9, 8],
  'dataplane/shared-memory.errors.ts#shmRegionTruncated': (h) => [h],
  'dataplane/shared-memory.errors.ts#shmOutputTooSmall': (h) => [h, 4, 8],
  'dataplane/shared-memory.errors.ts#shmRegisterBodyNotObject': () => [],
  'dataplane/shared-memory.errors.ts#shmRegisterKeyNotString': () => [],
  'dataplane/shared-memory.errors.ts#cudaShmUnsupported': (h) => [h],
  'frontend/infer-request.errors.ts#shmRegionNotString': (h) => [h],
  'frontend/infer-request.errors.ts#shmParamNotCount': (h) => [h, h],
  'frontend/infer-request.errors.ts#shmByteSizeMissing': (h) => [h],
  'frontend/infer-request.errors.ts#requestParamsNotObject': () => [],
  'frontend/infer-request.errors.ts#inputContentTypeInvalid': () => [true, true, false],
  'frontend/infer-request.errors.ts#shapeOverflow': (h) => [[h, 2], h],
  'frontend/infer-request.errors.ts#requestJsonShort': () => [8],
  'frontend/infer-request.errors.ts#requestNotObject': () => [],
  'frontend/infer-request.errors.ts#inputDatatypeInvalid': (h) => [h],
  'frontend/infer-request.errors.ts#inputBinaryShort': (h) => [h, 8, h],
  'frontend/infer-request.errors.ts#inputDataExtra': (h) => [h],
  'frontend/infer-request.errors.ts#outputRepeated': (h) => [h],
  'frontend/infer-request.errors.ts#rawInputCount': (h) => [2, h],
  'frontend/infer-request.errors.ts#rawBytesShape': (h) => [h],
  'frontend/infer-request.errors.ts#rawShapeAmbiguous': (h) => [h],
  'frontend/infer-request.errors.ts#rawShapeMismatch': (h) => [h, 3, [2, -1]],
  'frontend/infer-request.errors.ts#versionInvalid': (h) => [h],
  'frontend/infer-request.errors.ts#parameterNoValue': (h) => [h],
  'frontend/infer-request.errors.ts#shapeDimNegative': (h) => [h],
  'frontend/infer-request.errors.ts#inputContentsAndShm': (h) => [h, h],
  'frontend/infer-request.errors.ts#inputContentsAndRaw': (h) => [h, h],
  'frontend/infer-request.errors.ts#inputDataMissing': (h) => [h, h],
  'frontend/infer-request.errors.ts#classificationNotCount': (h) => [h],
  'frontend/infer-request.errors.ts#emptyFinalResponseNotBool': () => [],
  'repository/upload-store.errors.ts#notPlainName': (h) => [h, JSON.stringify(h)],
  'repository/upload-store.errors.ts#overridePathTooLong': (h) => [JSON.stringify(h), 1024],
  'repository/upload-store.errors.ts#overridePathNotRelative': (h) => [JSON.stringify(h)],
  'repository/upload-store.errors.ts#overridePathFileAndDir': (h) => [JSON.stringify(h)],
  'repository/upload-store.errors.ts#namespaceInvalid': (h) => [JSON.stringify(h)],
  'repository/upload-store.errors.ts#uploadTooLarge': (h) => [h, 9, 8],
  'repository/upload-store.errors.ts#storedModelDamaged': (h) => [h, h],
  'repository/upload-store.errors.ts#operatorNotTenant': () => [],
  'repository/upload-store.errors.ts#tenantUploadsMoving': (h) => [h],
  'repository/upload-store.errors.ts#storePathNotPlain': () => [],
  'repository/upload-store.errors.ts#storePathOutside': () => [],
  'repository/upload-store.errors.ts#storeFull': (h) => ['load', h],
  'repository/upload-store.errors.ts#storeFailed': (h) => ['load', h, h],
  'repository/upload-store.errors.ts#configOverrideNotJson': (h) => [h, h],
  'repository/upload-store.errors.ts#overrideNotString': (h) => [h],
  'repository/upload-store.errors.ts#overrideNotBase64': (h) => [h],
  'repository/model-files.errors.ts#fileNameEmpty': (h) => [h],
  'repository/model-files.errors.ts#fileNameAbsolute': (h) => [h],
  'repository/model-files.errors.ts#fileNameTooLong': (h) => [h, 4096],
  'repository/model-files.errors.ts#fileNameBadCharacters': (h) => [h, JSON.stringify(h)],
  'repository/model-files.errors.ts#fileNameEscapes': (h) => [h, JSON.stringify(h)],
  'repository/model-files.errors.ts#fileNeedsLinux': (h) => [h, JSON.stringify(h)],
  'repository/model-files.errors.ts#modelDirUnreadable': (h) => [h, JSON.stringify(h), 'EACCES'],
  'repository/model-files.errors.ts#byteCapInvalid': (h) => [h, 8, JSON.stringify(h)],
  'backends/wasm/sandbox.errors.ts#memoryParamTooSmall': (h) => [h, h, 8],
  'backends/wasm/sandbox.errors.ts#engineUnknown': (h) => [h, h, [h], h],
  'backends/wasm/sandbox.errors.ts#engineNotServed': (h) => [h, h],
  'backends/wasm/sandbox.errors.ts#engineMismatch': (h) => [h, h],
  'backends/wasm/sandbox.errors.ts#engineDisposed': () => [],
  'backends/wasm/sandbox.errors.ts#outputDatatypeUnsupported': (h) => [h, h, h],
  'backends/wasm/sandbox.errors.ts#componentGrew': (h) => [h, h, 8],
  'backends/wasm/sandbox.errors.ts#componentChanged': (h) => [h],
  'backends/wasm/sandbox.errors.ts#componentFileName': (h) => [h, h],
  'backends/wasm/sandbox.errors.ts#componentMalformed': (h) => [h, h, 'INVALID_ARG'],
  'backends/wasm/sandbox.errors.ts#componentRefused': (h) => [h],
  'backends/wasm/sandbox.errors.ts#componentNoBackend': (h) => [h, h],
  'backends/wasm/sandbox.errors.ts#componentExtraExport': (h) => [h, h, h],
  'backends/wasm/sandbox.errors.ts#notCoreModule': (h) => [h],
  'backends/wasm/sandbox.errors.ts#memoryFeatureUnsupported': (h) => [h, h],
  'backends/wasm/sandbox.errors.ts#memoryAtStartTooLarge': (h) => [h, 8, 8],
  'backends/wasm/sandbox.errors.ts#coreModuleCompile': (h) => [h, h, h],
  'backends/wasm/sandbox.errors.ts#transpileFailed': (h) => [h, h],
  'backends/wasm/sandbox.errors.ts#transpileBroken': (h) => [h, h],
  'backends/wasm/sandbox.errors.ts#wasmtimeCompile': (h) => [h, 'INVALID_ARG', h],
  'backends/wasm/sandbox.errors.ts#instanceMemoryFull': (h) => [h, h, 8, h, h, 8, 8],
  'backends/wasm/sandbox.errors.ts#modelMemoryTooLarge': (h) => [h, 8, 8, h, h, 8, h],
  'backends/wasm/sandbox.errors.ts#budgetOutside': (h) => [h, h],
  'backends/wasm/sandbox.errors.ts#startupError': (h) => [h, h],
  'backends/wasm/sandbox.errors.ts#startupExit': (h) => [h, 8],
  'backends/wasm/sandbox.errors.ts#startFailed': (h) => [h, h],
  'backends/wasm/sandbox.errors.ts#trappedAtStart': (h) => [h, h],
  'backends/wasm/sandbox.errors.ts#trapped': (h) => [h, h],
  'backends/wasm/sandbox.errors.ts#deadlineExceeded': (h) => [h, 8],
  'backends/wasm/sandbox.errors.ts#sandboxFailed': (h) => [h, h],
  'backends/wasm/sandbox.errors.ts#resultMalformed': (h) => [h, h],
  'backends/wasm/sandbox.errors.ts#sandboxUnavailable': (h) => [h, h],
  'backends/wasm/sandbox.errors.ts#instanceFinalized': (h) => [h, h],
  'backends/wasm/sandbox.errors.ts#startTimeout': (h) => [h, 8],
  'backends/wasm/sandbox.errors.ts#sandboxGone': (h) => [h],
  'backends/wasm/sandbox.errors.ts#finalizedDuringStart': (h) => [h, h],
  'backends/wasm/sandbox.errors.ts#finalizedInFlight': (h) => [h, h],
  // `file` is a checked plain name by then (backends/wasm/backend.ts refuses any '/')
  'backends/wasm/sandbox.errors.ts#componentMissing': (h) => [h, 8, h, 'model.wasm'],
  'backends/wasm/sandbox.errors.ts#componentNotFile': (h) => [h, 8, h],
  'backends/wasm/sandbox.errors.ts#componentTooLarge': (h) => [h, h, 8, 8],
  'trace/trace-settings.errors.ts#settingNotString': (h) => [h, { path: h }],
  'trace/trace-settings.errors.ts#settingNotInteger': (h) => [h, h],
  'trace/trace-settings.errors.ts#traceCountTooSmall': (h) => [-1, h],
  'trace/trace-settings.errors.ts#settingOutOfRange': (h) => [h, 0, 9, h],
  'trace/trace-settings.errors.ts#traceSettingsNotObject': () => [],
  'trace/trace-settings.errors.ts#traceFileNotUpdatable': () => [],
  'trace/trace-settings.errors.ts#traceJsonType': () => ['array'],
  'trace/trace-settings.errors.ts#traceLevelOffNotAlone': () => [],
  'dataplane/settings.errors.ts#logSettingsNotObject': () => [],
  'dataplane/settings.errors.ts#logFileNotUpdatable': () => [],
  'dataplane/settings.errors.ts#logSettingNotBoolean': (h) => [h],
  'dataplane/settings.errors.ts#logVerboseLevelInvalid': () => [],
  'dataplane/settings.errors.ts#logFormatInvalid': (h) => [h],
  'dataplane/settings.errors.ts#logSettingUnknown': (h) => [h],
  'dataplane/settings.errors.ts#tracingUnsupported': () => [],
  'dataplane/settings.errors.ts#traceModelUnknown': (h) => [h],
  'dataplane/settings.errors.ts#settingsAdminOnly': (h) => [h],
  'backends/native/native.errors.ts#uploadedNotServed': (h) => [h, h],
  'backends/native/native.errors.ts#rawInputCount': (h) => [8, 8, h],
  'backends/native/native.errors.ts#rawInputDatatype': (h) => [h, h, h, h],
  'backends/native/native.errors.ts#rawShapeAmbiguous': (h) => [h],
  'backends/native/native.errors.ts#rawBytesShape': (h) => [h],
  'backends/native/native.errors.ts#metadataUnavailable': () => [],
  'backends/native/native.errors.ts#configUnavailable': () => [],
  'backends/native/native.errors.ts#modelControlUnavailable': () => [],
  'backends/native/native.errors.ts#rawInputsNeedConfig': () => [],
  'backends/native/native.errors.ts#unknownCall': (h) => [h],
  'backends/native/native.errors.ts#callerUnloaded': () => [],
  'backends/native/native.errors.ts#isolationInvalid': (h) => [h, h, h],
  'backends/native/native.errors.ts#ringBytesTooLarge': (h) => [h, h, 8],
  'backends/native/native.errors.ts#unloadedWhileStarting': (h) => [h],
  'backends/native/native.errors.ts#ringsTimeout': (h) => [h, 8],
  'backends/native/native.errors.ts#hostUnavailable': (h) => [h, h],
  'backends/native/native.errors.ts#batchRefused': (h) => [h, h],
  'backends/native/native.errors.ts#batchOverRing': (h) => [h, 8, 8, h],
  'backends/native/native.errors.ts#noRings': () => [],
  'backends/native/native.errors.ts#hostModelNotLoaded': () => [],
  'backends/native/native.errors.ts#notNativeInstance': () => [],
  'backends/native/native.errors.ts#hostExited': (h) => [h],
  'backends/native/native.errors.ts#hostUnreachable': (h) => [h],
  'backends/native/native.errors.ts#failedInFlight': (h) => [h],
  'backends/native/native.errors.ts#bridgeInferUnavailable': () => [],
  'backends/native/native.errors.ts#hostFailed': (h) => [h],
  'backends/library-search.errors.ts#backendNameInvalid': (h) => [h],
  'backends/library-search.errors.ts#runtimeInvalid': (h) => [h, h],
  // the backend name is a checked plain name by then (backendNameInvalid)
  'backends/library-search.errors.ts#libraryNotFound': (h) => [h, 'custom', h, h],
  'ensemble/ensemble.errors.ts#tensorTypeInconsistent': (h) => [h, h, h, h, h],
  'ensemble/ensemble.errors.ts#tensorShapeInconsistent': (h) => [h, [1, -1], h, [2], h],
  'ensemble/ensemble.errors.ts#mapToMissingInput': (h) => [h, h, h, h],
  'ensemble/ensemble.errors.ts#inputNotMapped': (h) => [h, h, h],
  'ensemble/ensemble.errors.ts#mapFromMissingOutput': (h) => [h, h, h, h],
  'ensemble/ensemble.errors.ts#stepBatchTooSmall': (h) => [h, 8, h, 8],
  'ensemble/ensemble.errors.ts#mixedDecoupledInputs': (h) => [h, h],
  'ensemble/ensemble.errors.ts#stepModelNameInvalid': (h) => [h, h, h],
  'ensemble/ensemble.errors.ts#noServer': () => [],
  'ensemble/ensemble.errors.ts#stepsUnavailable': (h) => [h, [h]],
  'ensemble/ensemble.errors.ts#cacheDecoupled': (h) => [h],
  'ensemble/ensemble.errors.ts#outputsNotProduced': (h) => [h, [h]],
  'ensemble/ensemble.errors.ts#sequenceIdParamType': () => [],
  'ensemble/ensemble.errors.ts#sequenceFlagParamType': (h) => [h],
  'ensemble/ensemble.errors.ts#planOverInferenceCap': (h) => [h, 8, 8],
  'ensemble/ensemble.errors.ts#nestedTooDeep': (h) => [h, 8, 8],
  'ensemble/ensemble.errors.ts#requestOverInferenceCap': (h) => [h, 8],
  'ensemble/ensemble.errors.ts#requestOverFanout': (h) => [h, 8],
  'backends/onnxruntime/onnxruntime.errors.ts#modelFileRefused': (h) => [h, 8, h, h],
  'backends/onnxruntime/onnxruntime.errors.ts#parameterNotCount': (h) => [h, h],
  'backends/onnxruntime/onnxruntime.errors.ts#autoCompleteNotTensor': (h) => [h],
  'backends/onnxruntime/onnxruntime.errors.ts#autoCompleteType': (h) => [h, h],
  'backends/onnxruntime/onnxruntime.errors.ts#instanceUnavailable': (h) => [h, h],
  'backends/onnxruntime/onnxruntime.errors.ts#instanceFinalized': (h) => [h],
  'backends/onnxruntime/onnxruntime.errors.ts#optionalInputPartial': (h) => [h],
  'backends/onnxruntime/onnxruntime.errors.ts#outputUndeclared': (h) => [h, h],
  'backends/onnxruntime/onnxruntime.errors.ts#inlineEngineInvalid': (h) => [h],
  'backends/onnxruntime/onnxruntime.errors.ts#sessionInputUnknown': (h) => [h, [h]],
  'backends/onnxruntime/onnxruntime.errors.ts#sessionOutputUnknown': (h) => [h, [h]],
  'backends/onnxruntime/onnxruntime.errors.ts#engineTensorUnknown': (h) => ['input', h],
  'backends/onnxruntime/onnxruntime.errors.ts#engineDatatype': (h) => [h],
  'backends/onnxruntime/onnxruntime.errors.ts#executeFailed': (h) => [h, 'INVALID_ARG'],
  'backends/onnxruntime/onnxruntime.errors.ts#outputTypeMismatch': (h) => [h, 8, h],
  'backends/onnxruntime/onnxruntime.errors.ts#outputMissing': (h) => [h],
  'backends/onnxruntime/onnxruntime.errors.ts#modelTooDeep': () => [8],
  'backends/onnxruntime/onnxruntime.errors.ts#tooManyExternalEntries': () => [8],
  'backends/onnxruntime/onnxruntime.errors.ts#modelUnparsable': (h) => [h],
  'backends/python/python.errors.ts#uploadedNotServed': (h) => [h, h],
  'backends/python/python.errors.ts#uploadedModel': (h) => [h],
  'backends/python/python.errors.ts#fileNameInvalid': (h) => [h, h],
  'backends/python/python.errors.ts#parameterNotCount': (h) => [h, h, h],
  'backends/python/python.errors.ts#backendModelMissing': (h) => [h, h],
  'backends/python/python.errors.ts#modelFileMissing': (h) => [h, h, 8],
  'backends/python/python.errors.ts#envArchiveMissing': (h) => [h],
  'backends/python/python.errors.ts#envArchiveUnpack': (h) => [h, h],
  'backends/python/python.errors.ts#envNoPython': (h) => [h],
  'backends/python/python.errors.ts#stubMissing': (h) => [h],
  'backends/python/python.errors.ts#interpreterStart': (h) => [h, h],
  'backends/python/python.errors.ts#instanceUnloading': () => [],
  'backends/python/python.errors.ts#instanceNoProcess': (h) => [h, h],
  'backends/python/python.errors.ts#inputsNotPassed': (h) => [h],
  'backends/python/python.errors.ts#modelUnloaded': () => [],
  'backends/python/python.errors.ts#blsDecoupled': (h) => [h],
  'backends/python/python.errors.ts#modelControlUnavailable': () => [],
  'backends/python/python.errors.ts#loadTooManyFiles': (h) => [h, 8],
  'backends/python/python.errors.ts#loadFilesTooLarge': (h) => [h, 8, 8],
  'backends/python/python.errors.ts#loadFileMalformed': (h) => [h],
  'backends/python/python.errors.ts#loadParameterUnknown': (h) => [h, h],
  'frontend/infer-request.errors.ts#contentsNoList': (h) => [h, h],
  'frontend/infer-request.errors.ts#contentsOtherLists': (h) => [h, h, h],
  'frontend/infer-request.errors.ts#contentsCountMismatch': (h) => [h, h, 2, 3],
  'tensor/tensor.errors.ts#jsonHalfUnsupported': (h) => [h, h],
  'tensor/tensor.errors.ts#jsonDataShapeMismatch': () => [],
  // `expected` is one of the JSON type words
  'tensor/tensor.errors.ts#jsonDataElementType': (h) => ['number', h],
  'tensor/tensor.errors.ts#jsonDatatypeUnhandled': (h) => [h],
  'tensor/tensor.errors.ts#outputBytesNotElements': (h) => [8, h, 8],
  'tensor/tensor.errors.ts#bytesLengthIncomplete': (h) => [h],
  'tensor/tensor.errors.ts#bytesElementPastEnd': (h) => [h, 8],
  'lifecycle/validate.errors.ts#inputsMissing': (h) => [h, h, 1, 2, [h], [h]],
  'lifecycle/validate.errors.ts#inputUnexpected': (h) => [h, h],
  'lifecycle/validate.errors.ts#inputRepeated': (h) => [h, h],
  'lifecycle/validate.errors.ts#inputDatatypeMismatch': (h) => [h, h, 'FP32', h, 'INT8'],
  'lifecycle/validate.errors.ts#inputNoBatchDim': (h) => [h, h, h],
  'lifecycle/validate.errors.ts#inputBatchMismatch': (h) => [h, h, h],
  'lifecycle/validate.errors.ts#inputShapeMismatch': (h) => [h, h, h, [-1, 2], [3], true],
  'lifecycle/validate.errors.ts#inputBytesInvalid': (h) => [h, h, h],
  'lifecycle/validate.errors.ts#inputByteSizeMismatch': (h) => [h, h, h, h],
  'lifecycle/validate.errors.ts#batchTooLarge': (h) => [h, h, 8],
  'lifecycle/validate.errors.ts#batchTooSmall': (h) => [h],
  'lifecycle/validate.errors.ts#outputUnexpected': (h) => [h, h],
  'lifecycle/validate.errors.ts#backendOutputUnexpected': (h) => [h, h],
  'lifecycle/validate.errors.ts#backendOutputShape': (h) => [h, h, [1], [2]],
  'lifecycle/validate.errors.ts#backendOutputInvalidShape': (h) => [h, [-1]],
  'lifecycle/validate.errors.ts#backendOutputBytes': (h) => [h, h],
};

/** The catalogue modules: every `*.errors.ts` under host/src, relative to it. */
function catalogueFiles(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return catalogueFiles(p);
    return e.name.endsWith('.errors.ts') ? [relative(SRC, p)] : [];
  });
}

/** Every exported function of every catalogue, as `'<file>#<name>'`. */
async function catalogue(): Promise<Map<string, (...args: unknown[]) => unknown>> {
  const out = new Map<string, (...args: unknown[]) => unknown>();
  for (const file of catalogueFiles()) {
    const mod = (await import(join(SRC, file))) as Record<string, unknown>;
    for (const [name, v] of Object.entries(mod)) if (typeof v === 'function') out.set(`${file}#${name}`, v as (...args: unknown[]) => unknown);
  }
  return out;
}

/** The message's absolute-path leaks: known texts, and any path redaction would still change. */
function leaks(message: string): string[] {
  const found = LEAKS.filter((l) => message.includes(l));
  if (/(^|[^.])\/etc\/shadow/.test(message)) found.push('/etc/shadow');
  if (redactAbsolutePaths(message) !== message) found.push(`an absolute path in ${JSON.stringify(message)}`);
  return found;
}

describe('error catalogues', () => {
  it('every catalogue function has a case here, and every case names a catalogue function', async () => {
    const fns = [...(await catalogue()).keys()].sort();
    expect(catalogueFiles()).toContain(join('dataplane', 'shared-memory.errors.ts'));
    expect(fns.filter((f) => !(f in CASES))).toEqual([]);
    expect(Object.keys(CASES).filter((c) => !fns.includes(c))).toEqual([]);
  });

  it('every message, built from hostile names and paths, leaves the data plane with no absolute path', async () => {
    const scrubber = new PathScrubber([{ path: REPO, label: '' }]);
    const bad: string[] = [];
    for (const [id, fn] of await catalogue()) {
      for (const h of HOSTILE) {
        const err = fn(...CASES[id]!(h));
        expect(err, id).toBeInstanceOf(TritonError);
        expect(ERROR_CODES, id).toContain((err as TritonError).code);
        const shown = scrubber.publicError(err).message;
        for (const l of leaks(shown)) bad.push(`${id}(${JSON.stringify(h)}): ${l}`);
      }
    }
    expect(bad).toEqual([]);
  });

  it("a message naming a model's directory keeps its code and names the model once relabelled, then scrubbed", () => {
    const err = new TritonError('INVALID_ARG', `failed to load '${tmpdir()}/up-7/acme': ${tmpdir()}/up-7/acme/1/model.wasm is not a component`);
    const relabelled = relabelledError(err, { path: `${tmpdir()}/up-7/acme`, label: 'acme' });
    expect(relabelled.code).toBe('INVALID_ARG');
    expect(relabelled.message).toBe("failed to load 'acme': acme/1/model.wasm is not a component");
    expect(new PathScrubber([]).publicError(relabelled).message).toBe(relabelled.message);
    expect(relabelledError(relabelled, { path: '/elsewhere', label: 'x' })).toBe(relabelled);
  });
});
