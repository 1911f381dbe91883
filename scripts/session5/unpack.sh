# Sourced by the session-5 device passes from the repo root: unpacks the carried release
# binaries (.carry/*.xz, xz-compressed to fit the device tool's carry limit: convtune.xz is the
# build under test, convtune-base.xz the build the session started from, for A/B runs) and
# libffi beside them.
mkdir -p target/release target/base
xz -dc .carry/convtune.xz > target/release/convtune && chmod +x target/release/convtune
if [ -f .carry/convtune-base.xz ]; then
  xz -dc .carry/convtune-base.xz > target/base/convtune && chmod +x target/base/convtune
  cp .carry/libffi.so.8 target/base/
fi
cp .carry/libffi.so.8 target/release/
export LD_LIBRARY_PATH=$PWD/target/release
