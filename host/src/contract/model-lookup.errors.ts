/**
 * The "unknown model" errors of a model lookup (Triton's texts, core `model_repository_manager.cc`),
 * one function per message: what the lifecycle answers for a name or version it does not have, and
 * what the BLS capability answers for a callee its caller may not reach, so that the two cannot be
 * told apart.
 */
import { type TritonError, notFound } from './errors.js';

/** NOT_FOUND: a model with no version known (Triton's text). */
export function modelNotFound(model: string): TritonError {
  return notFound(`Request for unknown model: '${model}' is not found`);
}

/** NOT_FOUND: a version the model does not have (Triton's text). */
export function versionNotFound(model: string, version: number): TritonError {
  return notFound(`Request for unknown model: '${model}' version ${version} is not found`);
}
