"""The zone definition: YAML loader (file:line:col), the frozen zone model, the workspace."""
