# Sourced by the session-4 device passes: unpacks the carried release binary (.carry/convtune.xz,
# xz-compressed to fit the device tool's carry limit) and libffi beside it, from the repo root.
mkdir -p target/release
xz -dc .carry/convtune.xz > target/release/convtune; chmod +x target/release/convtune
cp .carry/libffi.so.8 target/release/
export LD_LIBRARY_PATH=$PWD/target/release
