"""Shared fixtures: a user database path that does not exist, so the environment's
$CONVTUNE_DB or XDG database cannot change what the tests see."""

import pathlib
import sys

import pytest

SEED_003 = ("convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 -l 1 "
            "-j 1 -g 1 -F 2 --layout NHWC")
# An ld=tma config of seed 003 (its tensor maps are what the launcher tests check).
SEED_003_CONFIG = "v3:bm=128,bn=128,bk=64,wm=64,wn=128,st=3,va=2,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=tma"
SEED_003_KEY = ("convbfp16 -F 2 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 "
                "-l 1 -j 1 -g 1 -I NHWGC -f GKYXC -O NHWGC")
# What the shipped database answers for seed 003 to a lookup naming no GPU (its home device's
# entry), read from it (a re-tune edits no test; scripts/lib/tuned_db.py).
_ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(_ROOT / "scripts" / "lib"))
from tuned_db import load  # noqa: E402

SEED_003_SHIPPED = next(e["config"] for e in load(str(_ROOT / "tuned-db" / "sm_90.toml"))[2]
                        if e["problem"] == SEED_003_KEY)
# Its fields, as `convtune.lookup` names them: `{"bm": "256", …}` by key.
SEED_003_FIELDS = dict(kv.split("=") for kv in SEED_003_SHIPPED.split(":")[1].split(","))


@pytest.fixture
def no_user_db(tmp_path):
    return str(tmp_path / "absent.toml")
