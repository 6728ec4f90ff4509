/** @module Interface warden:backend/backend@0.1.1 **/
export type Error = import('./warden-backend-types.js').Error;
export type Request = import('./warden-backend-types.js').Request;
export type Response = import('./warden-backend-types.js').Response;
/**
 * What `TRITONBACKEND_ModelInitialize` can query about the model.
 */
export interface ModelContext {
  /**
   * Model name (`TRITONBACKEND_ModelName`).
   */
  name: string,
  /**
   * Model version (`TRITONBACKEND_ModelVersion`).
   */
  version: bigint,
  /**
   * The model configuration as JSON, exactly as `GET /v2/models/{name}/config` prints it
   * (`TRITONBACKEND_ModelConfig`, spec §1.7): e.g. `max_batch_size`, `input`, `output`,
   * `parameters`, `model_transaction_policy`.
   */
  config: string,
}
/**
 * `TRITONSERVER_InstanceGroupKind` of an instance.
 * # Variants
 * 
 * ## `"cpu"`
 * 
 * ## `"gpu"`
 * 
 * ## `"model"`
 */
export type InstanceKind = 'cpu' | 'gpu' | 'model';
/**
 * What `TRITONBACKEND_ModelInstanceInitialize` can query about the instance.
 */
export interface InstanceContext {
  /**
   * Instance name, `<instance group name>_<index>` (`TRITONBACKEND_ModelInstanceName`).
   */
  name: string,
  /**
   * Instance kind (`TRITONBACKEND_ModelInstanceKind`); sandboxed instances run on CPU.
   */
  kind: InstanceKind,
  /**
   * Device id (`TRITONBACKEND_ModelInstanceDeviceId`).
   */
  deviceId: number,
}
export type Result<T, E> = { tag: 'ok', val: T } | { tag: 'err', val: E };

export class Instance implements Disposable {
  /**
   * This type does not have a public constructor.
   */
  private constructor();
  /**
  * `TRITONBACKEND_ModelInstanceInitialize`. An error fails the model load.
  */
  static create(model: Model, context: InstanceContext): Instance;
  /**
  * `TRITONBACKEND_ModelInstanceExecute` over a batch of requests (one request unless the
  * model's scheduler batches).
  * 
  * Returns one entry per request, in request order: `ok` is the request's final response,
  * `err` its error. An entry is ignored for a request that already got its final response
  * through `host.send-response` / `host.send-final` during this call; decoupled models
  * usually send everything that way and return an empty list. After the call, a request
  * still without its final response gets one from the host: the flags-only final for a
  * decoupled model, an `internal` error ("returned N responses for M requests") otherwise.
  */
  execute(requests: Array<Request>): Array<Result<Response, Error>>;
  [Symbol.dispose](): void;
}

export class Model implements Disposable {
  /**
   * This type does not have a public constructor.
   */
  private constructor();
  /**
  * `TRITONBACKEND_ModelInitialize`: check the configuration and set up model-wide state.
  * An error fails the model load with that error's message.
  */
  static create(context: ModelContext): Model;
  [Symbol.dispose](): void;
}
