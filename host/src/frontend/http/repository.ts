/** The model repository extension (spec §3.1): index, load (with config / file overrides), unload. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { fileDigestsOf, type FileOverrides } from '../../repository/overrides.js';
import { isJsonObject, optionalJson, requestBody } from './body.js';
import { OFFLOAD_BYTES } from './codec/pool.js';
import { parseLoadRequest } from './load-request.js';
import type { FrontendContext } from './context.js';
import * as httpErrors from './http.errors.js';

export async function handleIndex(ctx: FrontendContext, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const body = optionalJson(req, ctx.maxInputSize);
  let ready = false;
  if (body !== undefined) {
    if (!isJsonObject(body)) throw httpErrors.indexNotObject();
    if (body.ready !== undefined) {
      if (typeof body.ready !== 'boolean') throw httpErrors.memberType('ready', 'boolean');
      ready = body.ready;
    }
  }
  return reply
    .code(200)
    .type('application/json')
    .send(JSON.stringify(await ctx.api.repositoryIndex(ctx.principalOf(req), ready)));
}

export async function handleLoad(ctx: FrontendContext, req: FastifyRequest, reply: FastifyReply, model: string): Promise<FastifyReply> {
  const body = requestBody(req, ctx.maxInputSize);
  // Charged before the body was read when it came with a Content-Length (auth.ts).
  if (req.tenant && req.headers['content-length'] === undefined) ctx.api.uploadRate.admit(req.tenant, body.length);
  // A large body (an upload) is parsed and its files decoded on a codec worker, off the event loop.
  const parts = body.length >= OFFLOAD_BYTES ? await ctx.codec.parseLoad(body, model) : parseLoadRequest(model, body);
  const files: FileOverrides = new Map(parts.files);
  const fileDigests = fileDigestsOf(parts.digests, files);
  await ctx.api.loadModel(ctx.principalOf(req), model, { configOverride: parts.configOverride, files, fileDigests });
  return reply.code(200).send();
}

export async function handleUnload(ctx: FrontendContext, req: FastifyRequest, reply: FastifyReply, model: string): Promise<FastifyReply> {
  const body = optionalJson(req, ctx.maxInputSize);
  if (body !== undefined && !isJsonObject(body)) throw httpErrors.unloadNotObject();
  const params = isJsonObject(body) ? body.parameters : undefined;
  if (params !== undefined) {
    if (!isJsonObject(params)) throw httpErrors.memberType('parameters', 'object');
    if (params.unload_dependents !== undefined && typeof params.unload_dependents !== 'boolean') {
      throw httpErrors.memberType('unload_dependents', 'boolean');
    }
    if (params.delete_files !== undefined && typeof params.delete_files !== 'boolean') {
      throw httpErrors.memberType('delete_files', 'boolean');
    }
  }
  // Warden's extension: `delete_files: true` also deletes a tenant's stored upload.
  await ctx.api.unloadModel(ctx.principalOf(req), model, {
    deleteFiles: isJsonObject(params) && params.delete_files === true,
    unloadDependents: isJsonObject(params) && params.unload_dependents === true,
  });
  return reply.code(200).send();
}
