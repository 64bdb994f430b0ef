{{/* Names, labels and shared snippets. */}}

{{- define "xdb.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "xdb.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Selector labels of one component: (dict "root" $ "component" "api") */}}
{{- define "xdb.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "xdb.image" -}}
{{- $tag := .root.Values.image.tag | default .root.Chart.AppVersion -}}
{{- printf "%s/%s:%s" .root.Values.image.repository (index .root.Values.image.names .name) $tag -}}
{{- end -}}

{{- define "xdb.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "xdb.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{- define "xdb.databaseSecretName" -}}
{{- .Values.database.existingSecret | default (printf "%s-database" (include "xdb.fullname" .)) -}}
{{- end -}}

{{- define "xdb.databaseSecretKey" -}}
{{- if .Values.database.existingSecret -}}{{ .Values.database.existingSecretKey }}{{- else -}}database-url{{- end -}}
{{- end -}}

{{/* Environment every XDB container gets: the config file and the database URL. */}}
{{- define "xdb.commonEnv" -}}
- name: XDB_CONFIG
  value: /etc/xdb/xdb.toml
- name: XDB_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "xdb.databaseSecretName" . }}
      key: {{ include "xdb.databaseSecretKey" . }}
{{- with .Values.security.apiTokensSecret }}
- name: XDB_SECURITY_API_TOKENS
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.security.apiTokensSecretKey }}
{{- end }}
{{- with .Values.security.workerSigningSecret }}
- name: XDB_SECURITY_WORKER_SIGNING_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.security.workerSigningSecretKey }}
{{- end }}
{{- end -}}

{{- define "xdb.configVolume" -}}
- name: config
  configMap:
    name: {{ include "xdb.fullname" . }}-config
- name: tmp
  emptyDir: {}
{{- end -}}

{{- define "xdb.configMount" -}}
- name: config
  mountPath: /etc/xdb
  readOnly: true
- name: tmp
  mountPath: /tmp
{{- end -}}

{{/* Fails the render on values that cannot work, with a message naming the key. */}}
{{- define "xdb.validate" -}}
{{- if not (has .Values.queue.mode (list "database" "pulsar")) -}}
{{- fail (printf "queue.mode must be \"database\" or \"pulsar\", not %q" .Values.queue.mode) -}}
{{- end -}}
{{- if and (not .Values.database.url) (not .Values.database.existingSecret) -}}
{{- fail "set database.url or database.existingSecret" -}}
{{- end -}}
{{- if and (eq .Values.queue.mode "pulsar") (not .Values.pulsar.serviceUrl) -}}
{{- fail "pulsar.serviceUrl is required when queue.mode is \"pulsar\"" -}}
{{- end -}}
{{- if and (eq .Values.queue.mode "pulsar") .Values.pulsar.debezium.register (not .Values.pulsar.adminUrl) -}}
{{- fail "pulsar.adminUrl is required to register the Debezium source (or set pulsar.debezium.register=false)" -}}
{{- end -}}
{{- if and (eq .Values.queue.mode "pulsar") .Values.pulsar.debezium.register -}}
{{- $configs := .Values.pulsar.debezium.configs | default dict -}}
{{- if hasKey $configs "topic.prefix" -}}
{{- fail "pulsar.debezium.configs.topic.prefix is Debezium 2's key; Pulsar 4.0's connector (Debezium 1.9) takes database.server.name, which the chart sets from pulsar.topicPrefix" -}}
{{- end -}}
{{- if and (hasKey $configs "database.server.name") (ne (toString (index $configs "database.server.name")) (toString .Values.pulsar.topicPrefix)) -}}
{{- fail "pulsar.debezium.configs.database.server.name must equal pulsar.topicPrefix (the chart sets it from pulsar.topicPrefix; leave it out)" -}}
{{- end -}}
{{- end -}}
{{- end -}}
