/**
 * The operator's model repositories on local disk as a {@link ModelSource} (spec §5.1): the
 * operator namespace's models, one directory each, a name unique across repositories. Read only:
 * nothing is committed, released or cleaned up. Poll mode compares a fingerprint of each model's
 * files (`repository/scan.ts#fingerprintModel`).
 */
import type { Logger } from 'pino';
import { invalidArg } from '../contract/errors.js';
import type { ModelKey } from '../contract/types.js';
import { fingerprintModel, scanRepositories } from '../repository/scan.js';
import type { CatalogEntry, LoadOptions, LocatedModel, ModelFiles, ModelSource } from './model-source.js';

/** Triton's index reason for a name found in more than one repository. */
const DUPLICATE = 'model appears in two or more repositories';

export class RepositorySource implements ModelSource {
  constructor(
    private readonly repositories: readonly string[],
    private readonly logger: Logger,
  ) {}

  /**
   * Every model of the repositories (namespace `''`; other namespaces have none here).
   * @throws Error if a repository cannot be read
   */
  async catalog(namespace: string): Promise<ReadonlyMap<string, CatalogEntry>> {
    const out = new Map<string, CatalogEntry>();
    if (namespace !== '') return out;
    for (const [name, loc] of await scanRepositories(this.repositories)) {
      out.set(name, { problem: loc.duplicates.length > 0 ? DUPLICATE : undefined, stamp: () => fingerprintModel(loc.modelPath) });
    }
    return out;
  }

  /**
   * An operator model found on disk (loads with files are the upload store's).
   * @throws TritonError INVALID_ARG "failed to load '<m>', model appears in two or more
   *   repositories" (logged as Triton's Poll logs it); Error if a repository cannot be read
   */
  async locate(key: ModelKey, request: LoadOptions): Promise<LocatedModel | undefined> {
    if (key.namespace !== '' || (request.files && request.files.size > 0)) return undefined;
    const loc = (await scanRepositories(this.repositories)).get(key.name);
    if (!loc) return undefined;
    if (loc.duplicates.length > 0) {
      const e = invalidArg(`failed to load '${key.name}', ${DUPLICATE}`);
      this.logger.child({ model: key.name }).error({ reason: e.message }, `failed to poll model '${key.name}': not unique across all model repositories`);
      throw e;
    }
    const origin = { kind: 'repository', repository: loc.repositoryPath } as const;
    return {
      origin,
      open: async (): Promise<ModelFiles> => ({
        source: this,
        origin,
        modelPath: loc.modelPath,
        configOverride: request.configOverride,
        stamp: await fingerprintModel(loc.modelPath),
        commit: async () => undefined,
        abandon: async () => undefined,
        release: () => false,
        publicError: (e) => e,
      }),
    };
  }

  /** An operator model on disk. @throws Error if a repository cannot be read */
  async holds(key: ModelKey): Promise<boolean> {
    return key.namespace === '' && (await scanRepositories(this.repositories)).has(key.name);
  }
}
