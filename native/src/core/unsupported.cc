// Every TRITONSERVER_* / TRITONBACKEND_* function Warden exports but does not implement yet.
// Each returns TRITONSERVER_ERROR_UNSUPPORTED so a backend that references one still loads
// (dlopen RTLD_NOW needs the symbol) and gets a clear error if it calls it (spec §6.1).
// Generated from the declarations in native/include/warden/*.h (signatures must match them).
#include "objects.h"

#define WARDEN_UNSUPPORTED_BODY(name) \
  return ::warden::Unsupported(std::string(name) + " is not supported by Warden's native backend host")

extern "C" {

TRITONSERVER_Error* TRITONSERVER_MetricsDelete(TRITONSERVER_Metrics* metrics) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_MetricsDelete");
}

TRITONSERVER_Error* TRITONSERVER_MetricsFormatted(TRITONSERVER_Metrics* metrics, TRITONSERVER_MetricFormat format,
                                                  const char** base, size_t* byte_size) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_MetricsFormatted");
}

TRITONSERVER_Error* TRITONSERVER_InferenceTraceNew(TRITONSERVER_InferenceTrace** trace,
                                                   TRITONSERVER_InferenceTraceLevel level, uint64_t parent_id,
                                                   TRITONSERVER_InferenceTraceActivityFn_t activity_fn,
                                                   TRITONSERVER_InferenceTraceReleaseFn_t release_fn,
                                                   void* trace_userp) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_InferenceTraceNew");
}

TRITONSERVER_Error* TRITONSERVER_InferenceTraceTensorNew(
    TRITONSERVER_InferenceTrace** trace, TRITONSERVER_InferenceTraceLevel level, uint64_t parent_id,
    TRITONSERVER_InferenceTraceActivityFn_t activity_fn,
    TRITONSERVER_InferenceTraceTensorActivityFn_t tensor_activity_fn, TRITONSERVER_InferenceTraceReleaseFn_t release_fn,
    void* trace_userp) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_InferenceTraceTensorNew");
}

TRITONSERVER_Error* TRITONSERVER_InferenceTraceReportActivity(TRITONSERVER_InferenceTrace* trace, uint64_t timestamp,
                                                              const char* activity_name) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_InferenceTraceReportActivity");
}

TRITONSERVER_Error* TRITONSERVER_InferenceTraceDelete(TRITONSERVER_InferenceTrace* trace) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_InferenceTraceDelete");
}

TRITONSERVER_Error* TRITONSERVER_InferenceTraceId(TRITONSERVER_InferenceTrace* trace, uint64_t* id) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_InferenceTraceId");
}

TRITONSERVER_Error* TRITONSERVER_InferenceTraceParentId(TRITONSERVER_InferenceTrace* trace, uint64_t* parent_id) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_InferenceTraceParentId");
}

TRITONSERVER_Error* TRITONSERVER_InferenceTraceModelName(TRITONSERVER_InferenceTrace* trace, const char** model_name) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_InferenceTraceModelName");
}

TRITONSERVER_Error* TRITONSERVER_InferenceTraceModelVersion(TRITONSERVER_InferenceTrace* trace,
                                                            int64_t* model_version) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_InferenceTraceModelVersion");
}

TRITONSERVER_Error* TRITONSERVER_InferenceTraceRequestId(TRITONSERVER_InferenceTrace* trace, const char** request_id) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_InferenceTraceRequestId");
}

TRITONSERVER_Error* TRITONSERVER_InferenceTraceSpawnChildTrace(TRITONSERVER_InferenceTrace* trace,
                                                               TRITONSERVER_InferenceTrace** child_trace) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_InferenceTraceSpawnChildTrace");
}

TRITONSERVER_Error* TRITONSERVER_InferenceTraceSetContext(TRITONSERVER_InferenceTrace* trace,
                                                          const char* trace_context) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_InferenceTraceSetContext");
}

TRITONSERVER_Error* TRITONSERVER_InferenceTraceContext(TRITONSERVER_InferenceTrace* trace, const char** trace_context) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_InferenceTraceContext");
}

TRITONSERVER_Error* TRITONSERVER_InferenceResponseOutputClassificationLabel(
    TRITONSERVER_InferenceResponse* inference_response, const uint32_t index, const size_t class_index,
    const char** label) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_InferenceResponseOutputClassificationLabel");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsNew(TRITONSERVER_ServerOptions** options) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsNew");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsDelete(TRITONSERVER_ServerOptions* options) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsDelete");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetServerId(TRITONSERVER_ServerOptions* options, const char* server_id) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetServerId");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetModelRepositoryPath(TRITONSERVER_ServerOptions* options,
                                                                     const char* model_repository_path) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetModelRepositoryPath");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetModelControlMode(TRITONSERVER_ServerOptions* options,
                                                                  TRITONSERVER_ModelControlMode mode) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetModelControlMode");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetStartupModel(TRITONSERVER_ServerOptions* options,
                                                              const char* model_name) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetStartupModel");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetStrictModelConfig(TRITONSERVER_ServerOptions* options, bool strict) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetStrictModelConfig");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetModelConfigName(TRITONSERVER_ServerOptions* options,
                                                                 const char* model_config_name) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetModelConfigName");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetRateLimiterMode(TRITONSERVER_ServerOptions* options,
                                                                 TRITONSERVER_RateLimitMode mode) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetRateLimiterMode");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsAddRateLimiterResource(TRITONSERVER_ServerOptions* options,
                                                                     const char* resource_name,
                                                                     const size_t resource_count, const int device) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsAddRateLimiterResource");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetPinnedMemoryPoolByteSize(TRITONSERVER_ServerOptions* options,
                                                                          uint64_t size) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetPinnedMemoryPoolByteSize");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetCudaMemoryPoolByteSize(TRITONSERVER_ServerOptions* options,
                                                                        int gpu_device, uint64_t size) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetCudaMemoryPoolByteSize");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetCudaVirtualAddressSize(TRITONSERVER_ServerOptions* options,
                                                                        int gpu_device,
                                                                        size_t cuda_virtual_address_size) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetCudaVirtualAddressSize");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetResponseCacheByteSize(TRITONSERVER_ServerOptions* options,
                                                                       uint64_t size) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetResponseCacheByteSize");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetCacheConfig(TRITONSERVER_ServerOptions* options,
                                                             const char* cache_name, const char* config_json) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetCacheConfig");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetCacheDirectory(TRITONSERVER_ServerOptions* options,
                                                                const char* cache_dir) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetCacheDirectory");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetMinSupportedComputeCapability(TRITONSERVER_ServerOptions* options,
                                                                               double cc) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetMinSupportedComputeCapability");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetExitOnError(TRITONSERVER_ServerOptions* options, bool exit) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetExitOnError");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetStrictReadiness(TRITONSERVER_ServerOptions* options, bool strict) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetStrictReadiness");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetExitTimeout(TRITONSERVER_ServerOptions* options,
                                                             unsigned int timeout) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetExitTimeout");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetBufferManagerThreadCount(TRITONSERVER_ServerOptions* options,
                                                                          unsigned int thread_count) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetBufferManagerThreadCount");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetModelLoadThreadCount(TRITONSERVER_ServerOptions* options,
                                                                      unsigned int thread_count) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetModelLoadThreadCount");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetModelLoadRetryCount(TRITONSERVER_ServerOptions* options,
                                                                     unsigned int retry_count) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetModelLoadRetryCount");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetModelNamespacing(TRITONSERVER_ServerOptions* options,
                                                                  bool enable_namespace) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetModelNamespacing");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetEnablePeerAccess(TRITONSERVER_ServerOptions* options,
                                                                  bool enable_peer_access) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetEnablePeerAccess");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetLogFile(TRITONSERVER_ServerOptions* options, const char* file) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetLogFile");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetLogInfo(TRITONSERVER_ServerOptions* options, bool log) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetLogInfo");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetLogWarn(TRITONSERVER_ServerOptions* options, bool log) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetLogWarn");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetLogError(TRITONSERVER_ServerOptions* options, bool log) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetLogError");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetLogFormat(TRITONSERVER_ServerOptions* options,
                                                           const TRITONSERVER_LogFormat format) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetLogFormat");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetLogVerbose(TRITONSERVER_ServerOptions* options, int level) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetLogVerbose");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetMetrics(TRITONSERVER_ServerOptions* options, bool metrics) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetMetrics");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetGpuMetrics(TRITONSERVER_ServerOptions* options, bool gpu_metrics) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetGpuMetrics");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetCpuMetrics(TRITONSERVER_ServerOptions* options, bool cpu_metrics) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetCpuMetrics");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetMetricsInterval(TRITONSERVER_ServerOptions* options,
                                                                 uint64_t metrics_interval_ms) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetMetricsInterval");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetBackendDirectory(TRITONSERVER_ServerOptions* options,
                                                                  const char* backend_dir) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetBackendDirectory");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetRepoAgentDirectory(TRITONSERVER_ServerOptions* options,
                                                                    const char* repoagent_dir) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetRepoAgentDirectory");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetModelLoadDeviceLimit(TRITONSERVER_ServerOptions* options,
                                                                      const TRITONSERVER_InstanceGroupKind kind,
                                                                      const int device_id, const double fraction) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetModelLoadDeviceLimit");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetBackendConfig(TRITONSERVER_ServerOptions* options,
                                                               const char* backend_name, const char* setting,
                                                               const char* value) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetBackendConfig");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetHostPolicy(TRITONSERVER_ServerOptions* options,
                                                            const char* policy_name, const char* setting,
                                                            const char* value) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetHostPolicy");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetMetricsConfig(TRITONSERVER_ServerOptions* options, const char* name,
                                                               const char* setting, const char* value) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerOptionsSetMetricsConfig");
}

TRITONSERVER_Error* TRITONSERVER_ServerNew(TRITONSERVER_Server** server, TRITONSERVER_ServerOptions* options) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerNew");
}

TRITONSERVER_Error* TRITONSERVER_ServerDelete(TRITONSERVER_Server* server) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerDelete");
}

TRITONSERVER_Error* TRITONSERVER_ServerStop(TRITONSERVER_Server* server) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerStop");
}

TRITONSERVER_Error* TRITONSERVER_ServerSetExitTimeout(TRITONSERVER_Server* server, unsigned int timeout) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerSetExitTimeout");
}

TRITONSERVER_Error* TRITONSERVER_ServerRegisterModelRepository(TRITONSERVER_Server* server, const char* repository_path,
                                                               const TRITONSERVER_Parameter** name_mapping,
                                                               const uint32_t mapping_count) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerRegisterModelRepository");
}

TRITONSERVER_Error* TRITONSERVER_ServerUnregisterModelRepository(TRITONSERVER_Server* server,
                                                                 const char* repository_path) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerUnregisterModelRepository");
}

TRITONSERVER_Error* TRITONSERVER_ServerPollModelRepository(TRITONSERVER_Server* server) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerPollModelRepository");
}

TRITONSERVER_Error* TRITONSERVER_ServerModelBatchProperties(TRITONSERVER_Server* server, const char* model_name,
                                                            const int64_t model_version, uint32_t* flags,
                                                            void** voidp) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerModelBatchProperties");
}

TRITONSERVER_Error* TRITONSERVER_ServerMetadata(TRITONSERVER_Server* server, TRITONSERVER_Message** server_metadata) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerMetadata");
}

TRITONSERVER_Error* TRITONSERVER_ServerModelStatistics(TRITONSERVER_Server* server, const char* model_name,
                                                       const int64_t model_version,
                                                       TRITONSERVER_Message** model_stats) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerModelStatistics");
}

TRITONSERVER_Error* TRITONSERVER_ServerModelIndex(TRITONSERVER_Server* server, uint32_t flags,
                                                  TRITONSERVER_Message** model_index) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerModelIndex");
}

TRITONSERVER_Error* TRITONSERVER_ServerMetrics(TRITONSERVER_Server* server, TRITONSERVER_Metrics** metrics) {
  WARDEN_UNSUPPORTED_BODY("TRITONSERVER_ServerMetrics");
}

}  // extern "C"
