"""Authoring: scaffold a fillable agent package (`acx init --role`) and derive an agent set, a
workflow wiring it and RAC descriptions from a codebase (`acx init --from-code`)."""
