{{/* The image reference: repository and tag (default: the chart's appVersion). */}}
{{- define "tephra.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* Labels every object carries. */}}
{{- define "tephra.selector" -}}
app.kubernetes.io/name: tephra-scheduler
{{- end }}
