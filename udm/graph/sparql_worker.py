"""The SPARQL worker process: answers JSON-line requests over a read-only pyoxigraph store.

It runs in its own process because pyoxigraph cannot interrupt a running query: the parent kills
this process when a query passes its time limit and starts a fresh one, so a runaway query never
keeps a core busy in the caller. Only the standard library, pyoxigraph and `udm.workerproc` (its
JSON-line loop) are imported here, so a restart costs a fraction of a second.

Start:    python -m udm.graph.sparql_worker
Request:  {"store": path, "query": text, "bindings": {var: {"type": "iri"|"literal", "value": str}},
           "row_cap": n}
Response: {"ok": true, "vars": [...], "rows": [[...]], "truncated": bool, "boolean": bool|null}
          or {"ok": false, "error": text, "syntax": bool}
"""

from __future__ import annotations

from typing import Any

from udm.workerproc import serve_json_lines

__all__ = ["answer", "main"]

_STORES: dict[str, Any] = {}


def _term(term: Any) -> Any:
    import pyoxigraph as ox

    if term is None:
        return None
    if isinstance(term, ox.NamedNode):
        return term.value
    if isinstance(term, ox.Literal):
        datatype = term.datatype.value
        if datatype.endswith("#integer"):
            return int(term.value)
        if datatype.endswith("#boolean"):
            return term.value == "true"
        if datatype.endswith(("#decimal", "#double", "#float")):
            return float(term.value)
        return term.value
    if isinstance(term, ox.BlankNode):
        return f"_:{term.value}"
    return str(term)


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """Run one request against its store and return the response object."""
    import pyoxigraph as ox

    path = request["store"]
    store = _STORES.get(path)
    if store is None:
        try:
            store = ox.Store.read_only(path)
        except Exception as exc:
            return {"ok": False, "error": f"cannot open the RDF store {path}: {exc}", "syntax": False}
        # A long-lived worker sees a new store per graph fingerprint; keep only the two newest open.
        while len(_STORES) >= 2:
            _STORES.pop(next(iter(_STORES)))
        _STORES[path] = store
    bindings: dict[Any, Any] = {}
    for name, spec in (request.get("bindings") or {}).items():
        term = ox.NamedNode(spec["value"]) if spec.get("type") == "iri" else ox.Literal(str(spec["value"]))
        bindings[ox.Variable(name)] = term
    row_cap = int(request.get("row_cap") or 1000)
    try:
        result = store.query(request["query"], substitutions=bindings or None)
    except SyntaxError as exc:
        return {"ok": False, "error": str(exc), "syntax": True}
    except Exception as exc:
        return {"ok": False, "error": str(exc), "syntax": False}
    try:
        if isinstance(result, ox.QueryBoolean):
            return {"ok": True, "vars": ["result"], "rows": [[bool(result)]], "truncated": False}
        rows: list[list[Any]] = []
        truncated = False
        if isinstance(result, ox.QuerySolutions):
            names = [v.value for v in result.variables]
            for solution in result:
                if len(rows) >= row_cap:
                    truncated = True
                    break
                rows.append([_term(solution[name]) for name in names])
            return {"ok": True, "vars": names, "rows": rows, "truncated": truncated}
        for triple in result:
            if len(rows) >= row_cap:
                truncated = True
                break
            rows.append([_term(triple.subject), _term(triple.predicate), _term(triple.object)])
        return {"ok": True, "vars": ["subject", "predicate", "object"], "rows": rows, "truncated": truncated}
    except Exception as exc:
        return {"ok": False, "error": str(exc), "syntax": False}


def _failed(exc: Exception) -> dict[str, Any]:
    """The response to a request that raised."""
    return {"ok": False, "error": f"{type(exc).__name__}: {exc}", "syntax": False}


def main() -> None:
    """Serve requests from stdin until it closes; one JSON object per line each way."""
    serve_json_lines(answer, _failed)


if __name__ == "__main__":
    main()
