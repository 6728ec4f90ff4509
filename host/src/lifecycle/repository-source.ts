/**
 * The operator's model repositories as a {@link ModelSource} (spec §5.1): the operator namespace's
 * models, one directory each, a name unique across repositories. Each repository is local or in
 * an object store (repository/model-repository.ts); this source never learns which. Read only:
 * nothing is committed or cleaned up; a remote repository's local copy is released when the
 * versions built from it retire. Poll mode compares each model's stamp.
 */
import type { Logger } from 'pino';
import { relabelledError } from '../contract/public-errors.js';
import type { ModelKey } from '../contract/types.js';
import type { ModelRepository } from '../repository/model-repository.js';
import { carriesFiles, loggedBySource, type CatalogEntry, type LoadOptions, type LocatedModel, type ModelFiles, type ModelSource } from './model-source.js';
import { modelNotUnique } from './lifecycle.errors.js';

/** Triton's index reason for a name found in more than one repository. */
const DUPLICATE = 'model appears in two or more repositories';

/** Where one model lives: its repository, and whether another repository has the name too. */
interface Found {
  readonly repository: ModelRepository;
  readonly duplicated: boolean;
}

export class RepositorySource implements ModelSource {
  constructor(
    private readonly repositories: readonly ModelRepository[],
    private readonly logger: Logger,
  ) {}

  /**
   * Every model of the repositories (namespace `''`; other namespaces have none here).
   * @throws Error if a repository cannot be read
   */
  async catalog(namespace: string): Promise<ReadonlyMap<string, CatalogEntry>> {
    const out = new Map<string, CatalogEntry>();
    if (namespace !== '') return out;
    for (const [name, found] of await this.scan()) {
      out.set(name, { problem: found.duplicated ? DUPLICATE : undefined, stamp: () => found.repository.stamp(name) });
    }
    return out;
  }

  /**
   * An operator model found in a repository (loads with files are the upload store's).
   * @throws TritonError INVALID_ARG "failed to load '<m>', model appears in two or more
   *   repositories" (logged as Triton's Poll logs it); Error if a repository cannot be read
   */
  async locate(key: ModelKey, request: LoadOptions): Promise<LocatedModel | undefined> {
    if (key.namespace !== '' || carriesFiles(request)) return undefined;
    const found = (await this.scan()).get(key.name);
    if (!found) return undefined;
    if (found.duplicated) {
      const e = modelNotUnique(key.name, DUPLICATE);
      this.logger.child({ model: key.name }).error({ reason: e.message }, `failed to poll model '${key.name}': not unique across all model repositories`);
      throw loggedBySource(e);
    }
    return {
      // Refined to the local directory once opened (a remote repository's copy).
      origin: { kind: 'repository', repository: found.repository.location },
      open: async (): Promise<ModelFiles> => {
        const opened = await found.repository.open(key.name);
        let released = false;
        return {
          source: this,
          origin: { kind: 'repository', repository: opened.repositoryPath },
          modelPath: opened.modelPath,
          configOverride: request.configOverride,
          stamp: opened.stamp,
          commit: async () => undefined,
          abandon: async () => {
            if (!released) opened.release();
            released = true;
          },
          release: () => {
            if (!released) opened.release();
            released = true;
            return false;
          },
          // A fetched copy's directory reads as the repository's: paths become model-relative.
          publicError: (e) => relabelledError(e, { path: opened.repositoryPath, label: '' }),
        };
      },
    };
  }

  /** An operator model in a repository. @throws Error if a repository cannot be read */
  async holds(key: ModelKey): Promise<boolean> {
    return key.namespace === '' && (await this.scan()).has(key.name);
  }

  /** Every model name of every repository, with the repository that holds it first. */
  private async scan(): Promise<Map<string, Found>> {
    const found = new Map<string, Found>();
    for (const repository of this.repositories) {
      for (const name of await repository.models()) {
        const prev = found.get(name);
        found.set(name, prev ? { repository: prev.repository, duplicated: true } : { repository, duplicated: false });
      }
    }
    return found;
  }
}
