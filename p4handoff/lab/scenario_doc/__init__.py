"""Scenario files as pydantic models: the document's shape, its values and its names, and the run built from it.

`document.ScenarioDoc` is the file as written (after `extends:` and
`count:` expansion), `schema.scenario_schema()` its JSON Schema for editors,
`build.resolve_run()` one concrete run (`p4handoff.lab.scenario_model.Scenario`)
of it. `p4handoff.lab.scenario` reads files and lists their runs.
"""
