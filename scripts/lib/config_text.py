"""Config strings (`v1:bm=16,bn=64,...`) as (version, [(field, value), ...]) and back, for the
scripts that vary a field of a listed config (scripts/session37/twins.py,
scripts/session38/refine.py)."""


def fields(config):
    """`v1:bm=16,bn=64` -> ("v1", [["bm", "16"], ["bn", "64"]]), the fields in order."""
    head, rest = config.split(":", 1)
    return head, [kv.split("=", 1) for kv in rest.split(",")]


def render(head, kvs):
    """The config string of `fields`' answer."""
    return head + ":" + ",".join(f"{k}={v}" for k, v in kvs)
