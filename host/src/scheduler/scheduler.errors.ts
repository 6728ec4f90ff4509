/**
 * The error catalogue of the schedulers (scheduler/: queues and their policies, the dynamic and
 * sequence batchers, sequence controls and ids), one function per message. Triton's wording where
 * Triton has the message (core `src/scheduler_utils.cc`, `src/dynamic_batch_scheduler.cc`,
 * `src/sequence_batch_scheduler/sequence_batch_scheduler.cc`), Warden's otherwise.
 */
import { type TritonError, invalidArg, unavailable } from '../contract/errors.js';

/** UNAVAILABLE: a priority level's queue is full (Triton's text). */
export function queueFull(): TritonError {
  return unavailable('Exceeds maximum queue size');
}

/** UNAVAILABLE: a request whose queue timeout passed before it was scheduled (Triton's text). */
export function queueTimeout(): TritonError {
  return unavailable('Request timeout expired');
}

/** UNAVAILABLE: a tenant at its queue quota for the model (Warden's text). */
export function tenantQueueQuota(tenant: string, cap: number, model: string): TritonError {
  return unavailable(`tenant '${tenant}' exceeds its queue quota of ${cap} requests for model '${model}'`);
}

/** INVALID_ARG: a sequence request of batch size over 1 (Triton's text). */
export function sequenceBatchSize(model: string): TritonError {
  return invalidArg(`inference request to model '${model}' must specify batch-size 1 due to requirements of sequence batcher`);
}

/** INVALID_ARG: a sequence request without a correlation id (Triton's text). */
export function sequenceIdMissing(model: string): TritonError {
  return invalidArg(`inference request to model '${model}' must specify a non-zero or non-empty correlation ID`);
}

/** INVALID_ARG: the first request of a sequence without the START flag (Triton's text). */
export function sequenceNotStarted(id: string, model: string): TritonError {
  return invalidArg(`inference request for sequence ${id} to model '${model}' must specify the START flag on the first request of the sequence`);
}

/**
 * INVALID_ARG: an operator's sequence id in the range tenants' ids are mapped to; `shown` the id as
 * displayed, `range` the reserved integers (Warden's text).
 */
export function sequenceIdReserved(shown: string, model: string, range: string): TritonError {
  return invalidArg(
    `sequence ID ${shown} for model '${model}' is reserved: in multi-tenant mode, tenants' sequences reach an operator model's backend under ids from ${range} and strings starting with '@', which the operator's ids must avoid`,
  );
}

/** INVALID_ARG: a string sequence id for an integer CORRID control (Warden's text). */
export function sequenceIdNotInteger(id: string, model: string, input: string, type: string): TritonError {
  return invalidArg(`sequence ID '${id}' for model '${model}' must be an unsigned integer: the model's CONTROL_SEQUENCE_CORRID input '${input}' is ${type}`);
}

/** INVALID_ARG: an initial state `data_file` where no file can be read (Warden's text). */
export function initialStateFileUnsupported(state: string, model: string): TritonError {
  return invalidArg(`initial state '${state}' of model '${model}': data_file is not supported here`);
}

/** INVALID_ARG: an initial state `data_file` of another size than the state's, bytes (Warden's text). */
export function initialStateFileSize(state: string, model: string, file: string, bytes: number, expected: number): TritonError {
  return invalidArg(`initial state '${state}' of model '${model}': data_file '${file}' has ${bytes} bytes, expected ${expected}`);
}

/** INVALID_ARG: an initial state `data_file` that was not read with the model (Warden's text). */
export function initialStateFileUnread(file: string): TritonError {
  return invalidArg(`initial state data_file '${file}' was not read with the model`);
}
