{{/* The release's name for every object, at most 63 characters (a DNS label). */}}
{{- define "warden.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "warden.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "warden.labels" -}}
{{ include "warden.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "warden.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "warden.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding AWS_* credentials: an existing one, the chart's, or none. */}}
{{- define "warden.objectStoreSecret" -}}
{{- if .Values.objectStore.existingSecret -}}
{{- .Values.objectStore.existingSecret -}}
{{- else if .Values.objectStore.accessKeyId -}}
{{- printf "%s-object-store" (include "warden.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "warden.tenantsSecret" -}}
{{- default (printf "%s-tenants" (include "warden.fullname" .)) .Values.tenants.existingSecret -}}
{{- end -}}

{{/* terminationGracePeriodSeconds: the preStop pause, Warden's drain bound, and a margin. */}}
{{- define "warden.gracePeriod" -}}
{{- add .Values.preStopSleepSecs .Values.exitTimeoutSecs .Values.drainMarginSecs -}}
{{- end -}}
