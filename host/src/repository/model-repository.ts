/**
 * One model repository of the operator (spec §5.1), wherever it lives: a directory on local disk
 * or a prefix of an object store (Triton's cloud repositories, `s3://`). The lifecycle's
 * `RepositorySource` reads every repository through this interface and never learns which kind
 * it holds: names are listed, a model is stamped for poll mode, and a load opens the model's files
 * on local disk (a remote repository fetches them into a bounded local cache first).
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fingerprintModel } from './scan.js';

/** One model's files on local disk, held until {@link OpenedModel.release}. */
export interface OpenedModel {
  /** `<repositoryPath>/<model>`: `config.pbtxt`, the version folders, the files a config names. */
  readonly modelPath: string;
  /** The directory holding `modelPath` (the model's origin; a remote repository's local copy). */
  readonly repositoryPath: string;
  /** A stamp of the files as opened (poll mode compares it with {@link ModelRepository.stamp}). */
  readonly stamp: string;
  /** Every version built from these files has retired: a remote repository may evict its copy. Idempotent. */
  release(): void;
}

/** A model repository: local directory or object-store prefix. */
export interface ModelRepository {
  /** As the operator gave it (`/models`, `s3://bucket/path`): for logs, never for clients. */
  readonly location: string;
  /**
   * The model names: the repository's top-level directories (spec §5.1), hidden ones (`.x`) left out.
   * @throws Error when the repository cannot be read
   */
  models(): Promise<string[]>;
  /**
   * A stamp of the model's files now (names, sizes and modification stamps): a change of any file
   * changes it. @throws Error when the repository cannot be read
   */
  stamp(name: string): Promise<string>;
  /**
   * The model's files on local disk, as they are now.
   * @throws TritonError when the files cannot be fetched (the load fails with it)
   */
  open(name: string): Promise<OpenedModel>;
}

/** A repository on local disk: read in place, nothing is copied or released. */
export class LocalRepository implements ModelRepository {
  constructor(readonly location: string) {}

  async models(): Promise<string[]> {
    const names: string[] = [];
    for (const e of await readdir(this.location, { withFileTypes: true })) {
      if (e.name.startsWith('.')) continue;
      let isDir = e.isDirectory();
      if (e.isSymbolicLink()) isDir = (await stat(join(this.location, e.name)).catch(() => undefined))?.isDirectory() ?? false;
      if (isDir) names.push(e.name);
    }
    return names;
  }

  stamp(name: string): Promise<string> {
    return fingerprintModel(join(this.location, name));
  }

  async open(name: string): Promise<OpenedModel> {
    const modelPath = join(this.location, name);
    return { modelPath, repositoryPath: this.location, stamp: await fingerprintModel(modelPath), release: () => undefined };
  }
}
