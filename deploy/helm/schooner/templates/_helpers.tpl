{{- define "schooner.clientArgs" -}}
- --address={{ .Values.temporal.address }}
- --namespace={{ .Values.temporal.namespace }}
- --log-format={{ .Values.logFormat }}
- --log-level={{ .Values.logLevel }}
{{- if .Values.temporal.tlsSecret }}
- --tls-cert=/etc/schooner/tls/tls.crt
- --tls-key=/etc/schooner/tls/tls.key
- --tls-ca=/etc/schooner/tls/ca.crt
{{- end }}
{{- end -}}

{{- define "schooner.clientEnv" -}}
{{- if .Values.temporal.apiKeySecret }}
- name: TEMPORAL_API_KEY
  valueFrom:
    secretKeyRef: {name: {{ .Values.temporal.apiKeySecret }}, key: api-key}
{{- end }}
{{- end -}}

{{- define "schooner.tlsVolume" -}}
{{- if .Values.temporal.tlsSecret }}
volumes:
  - name: tls
    secret: {secretName: {{ .Values.temporal.tlsSecret }}}
{{- end }}
{{- end -}}

{{- /* Both workloads run unprivileged: a node agent runs job commands, so a compromised or
careless spec must not get root on the GPU machine or the cluster. */ -}}
{{- define "schooner.securityContext" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: {{ .Values.securityContext.runAsUser }}
  runAsGroup: {{ .Values.securityContext.runAsGroup }}
  allowPrivilegeEscalation: false
  capabilities: {drop: [ALL]}
  seccompProfile: {type: RuntimeDefault}
{{- end -}}
