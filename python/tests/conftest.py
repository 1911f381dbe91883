"""Shared fixtures: a user database path that does not exist, so the environment's
$CONVTUNE_DB or XDG database cannot change what the tests see."""

import pytest

SEED_003 = ("convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 -l 1 "
            "-j 1 -g 1 -F 2 --layout NHWC")
# An ld=tma config of seed 003 (its tensor maps are what the launcher tests check).
SEED_003_CONFIG = "v3:bm=128,bn=128,bk=64,wm=64,wn=128,st=3,va=2,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=tma"
# What the shipped database answers for seed 003.
SEED_003_SHIPPED = "v4:bm=256,bn=128,bk=64,wm=128,wn=128,st=4,va=4,vb=8,vc=8,lds=swz,sk=1,rs=4,mma=wg,red=atomic,ld=ws,pk=1,xf=none"


@pytest.fixture
def no_user_db(tmp_path):
    return str(tmp_path / "absent.toml")
