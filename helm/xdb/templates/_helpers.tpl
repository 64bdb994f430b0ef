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
{{- with .Values.security.tokens }}
{{- /* Each secret is its own variable; XDB_SECURITY_TOKENS refers to them with
     Kubernetes' $(VAR) expansion, so no secret is written into the manifest. The
     names are not XDB_<section>_ keys, so the services do not read them. */}}
{{- range $i, $token := . }}
- name: XDB_ROLE_TOKEN_{{ $i }}
  valueFrom:
    secretKeyRef:
      name: {{ $token.secret }}
      key: {{ $token.secretKey | default $token.name }}
{{- end }}
- name: XDB_SECURITY_TOKENS
  value: {{ include "xdb.tokensValue" $ | quote }}
{{- end }}
{{- with .Values.security.workerSigningSecret }}
- name: XDB_SECURITY_WORKER_SIGNING_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.security.workerSigningSecretKey }}
{{- end }}
{{- end -}}

{{/* security.tokens as one XDB_SECURITY_TOKENS value: an array of inline tables. */}}
{{- define "xdb.tokensValue" -}}
{{- $entries := list -}}
{{- range $i, $token := .Values.security.tokens -}}
{{- $roles := list -}}
{{- range $token.roles }}{{ $roles = append $roles (printf "%q" .) }}{{ end -}}
{{- $entries = append $entries (printf "{name=%q, token=\"$(XDB_ROLE_TOKEN_%d)\", roles=[%s]}" $token.name $i (join ", " $roles)) -}}
{{- end -}}
[{{ join ", " $entries }}]
{{- end -}}

{{- define "xdb.configVolume" -}}
- name: config
  configMap:
    name: {{ include "xdb.fullname" . }}-config
- name: tmp
  emptyDir: {}
{{ include "xdb.tlsVolumes" . }}
{{- end -}}

{{- define "xdb.configMount" -}}
- name: config
  mountPath: /etc/xdb
  readOnly: true
- name: tmp
  mountPath: /tmp
{{ include "xdb.tlsMounts" . }}
{{- end -}}

{{/* The TLS Secrets (values tls.*): name, Secret, mount path. */}}
{{- define "xdb.tlsSecrets" -}}
{{- $secrets := list -}}
{{- with .Values.tls.databaseSecret }}{{ $secrets = append $secrets (list "tls-database" . "/etc/xdb/tls/database") }}{{ end -}}
{{- with .Values.tls.workers.secret }}{{ $secrets = append $secrets (list "tls-workers" . "/etc/xdb/tls/workers") }}{{ end -}}
{{- with .Values.tls.pulsar.secret }}{{ $secrets = append $secrets (list "tls-pulsar" . "/etc/xdb/tls/pulsar") }}{{ end -}}
{{- toJson $secrets -}}
{{- end -}}

{{- define "xdb.tlsVolumes" -}}
{{- range (include "xdb.tlsSecrets" . | fromJsonArray) }}
- name: {{ index . 0 }}
  secret:
    secretName: {{ index . 1 }}
    # Readable by the pods' group (podSecurityContext.fsGroup), never written.
    defaultMode: 0440
{{- end }}
{{- end -}}

{{- define "xdb.tlsMounts" -}}
{{- range (include "xdb.tlsSecrets" . | fromJsonArray) }}
- name: {{ index . 0 }}
  mountPath: {{ index . 2 }}
  readOnly: true
{{- end }}
{{- end -}}

{{/* The definitions Job's token as a JSON array [Secret, key], or [] when it has none:
     definitions.tokenName (a security.tokens entry) or definitions.tokenSecret. */}}
{{- define "xdb.definitionsToken" -}}
{{- $d := .Values.definitions -}}
{{- $found := list -}}
{{- if $d.tokenName -}}
{{- range .Values.security.tokens -}}
{{- if eq (toString .name) (toString $d.tokenName) -}}
{{- $found = list .secret (.secretKey | default .name) -}}
{{- end -}}
{{- end -}}
{{- else if $d.tokenSecret -}}
{{- $found = list $d.tokenSecret $d.tokenSecretKey -}}
{{- end -}}
{{- toJson $found -}}
{{- end -}}

{{/* Fails the render on values that cannot work, with a message naming the key. */}}
{{- define "xdb.validate" -}}
{{- $names := dict -}}
{{- range $i, $token := .Values.security.tokens -}}
{{- $key := printf "security.tokens[%d]" $i -}}
{{- if not (regexMatch "^[A-Za-z0-9._-]{1,64}$" (toString $token.name)) -}}
{{- fail (printf "%s.name must be 1 to 64 letters, digits, `-`, `_` or `.`" $key) -}}
{{- end -}}
{{- if hasKey $names (toString $token.name) -}}
{{- fail (printf "%s.name: %q names another token too" $key $token.name) -}}
{{- end -}}
{{- $_ := set $names (toString $token.name) true -}}
{{- if not $token.secret -}}
{{- fail (printf "%s.secret must name the Secret holding the token" $key) -}}
{{- end -}}
{{- if not $token.roles -}}
{{- fail (printf "%s.roles must list at least one of read, operate, client, deploy" $key) -}}
{{- end -}}
{{- range $token.roles -}}
{{- if not (has (toString .) (list "read" "operate" "client" "deploy")) -}}
{{- fail (printf "%s.roles: %q is not a role (read, operate, client, deploy)" $key .) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $workers := .Values.tls.workers -}}
{{- if and $workers.secret (ne (not $workers.clientCertKey) (not $workers.clientKeyKey)) -}}
{{- fail "tls.workers.clientCertKey and tls.workers.clientKeyKey go together: set both for mutual TLS, or neither" -}}
{{- end -}}
{{- if and .Values.tls.pulsar.secret (not (hasPrefix "pulsar+ssl://" (toString .Values.pulsar.serviceUrl))) -}}
{{- fail "tls.pulsar.secret is for a pulsar+ssl:// pulsar.serviceUrl" -}}
{{- end -}}
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
{{- with .Values.definitions -}}
{{- if .register -}}
{{- if not .requestJson -}}
{{- fail "definitions.requestJson is empty: give the registration request, e.g. --set-file definitions.requestJson=definitions.json" -}}
{{- end -}}
{{- $request := fromJson (toString .requestJson) -}}
{{- if hasKey $request "Error" -}}
{{- fail (printf "definitions.requestJson is not a JSON object: %s" (index $request "Error")) -}}
{{- end -}}
{{- $deployment := $request.deployment | default dict -}}
{{- if not (kindIs "map" $deployment) -}}{{- $deployment = dict -}}{{- end -}}
{{- if not (and $deployment.name $deployment.version $deployment.workerUrl) -}}
{{- fail "definitions.requestJson needs a deployment with name, version and workerUrl" -}}
{{- end -}}
{{- if not (and (kindIs "slice" $request.definitions) $request.definitions) -}}
{{- fail "definitions.requestJson needs at least one process definition in definitions" -}}
{{- end -}}
{{- if and .tokenName .tokenSecret -}}
{{- fail "set definitions.tokenName or definitions.tokenSecret, not both" -}}
{{- end -}}
{{- if .tokenName -}}
{{- $entry := dict -}}
{{- range $.Values.security.tokens -}}
{{- if eq (toString .name) (toString $.Values.definitions.tokenName) -}}{{- $entry = . -}}{{- end -}}
{{- end -}}
{{- if not $entry -}}
{{- fail (printf "definitions.tokenName: no security.tokens entry is named %q" .tokenName) -}}
{{- end -}}
{{- if not (has "deploy" ($entry.roles | default list)) -}}
{{- fail (printf "definitions.tokenName: security.tokens entry %q lacks the deploy role that registering needs" .tokenName) -}}
{{- end -}}
{{- end -}}
{{- if and (or $.Values.security.apiTokensSecret $.Values.security.tokens) (not (or .tokenName .tokenSecret)) -}}
{{- fail "definitions.register: the API checks tokens (security.apiTokensSecret or security.tokens), so the Job needs one with the deploy role: set definitions.tokenName or definitions.tokenSecret" -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
