#!/usr/bin/env bash
# Generates real Flink checkpoints and savepoints holding recovery markers (issue 31), with what
# Flink's State Processor API reads from each, and prints their directory (the last line on
# stdout; progress goes to stderr). See docs/testing.md.
#
# The output is cached by a hash of every file in this directory:
#   ${KCLEANUP_CACHE:-$HOME/.cache/kcleanup}/flinkgen/<hash>/manifest.json
# so a second run prints the directory at once. The directory counts only once manifest.json is
# in it (written last, by a rename): retained checkpoints hold absolute file paths, so the
# snapshots are written where they stay and a half-written directory is removed and made anew.
#
# Needs Java 17+ and Maven; Maven runs offline when its cache has every artifact, else online.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lines=(flink-1.20 flink-2.0 flink-2.2) # modules of pom.xml
java="${JAVA_HOME:+$JAVA_HOME/bin/}java"

die() { echo "flinkgen: $*" >&2; exit 1; }
log() { echo "flinkgen: $*" >&2; }

hash=$(cd "$here" && find . -type f ! -name '*.md' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
cache="${KCLEANUP_CACHE:-$HOME/.cache/kcleanup}/flinkgen"
out="$cache/$hash"

if [[ -f $out/manifest.json ]]; then
  echo "$out"
  exit 0
fi

command -v mvn >/dev/null || die "Maven is needed to build the generator (apt-get install maven)"
command -v "$java" >/dev/null || die "Java 17 or newer is needed (none found; set JAVA_HOME)"
v=$("$java" -XshowSettings:properties -version 2>&1 | sed -n 's/ *java.specification.version = //p')
[[ ${v%%.*} -ge 17 ]] 2>/dev/null || die "Java 17 or newer is needed, found $v (set JAVA_HOME)"

mkdir -p "$cache"
exec 9>"$cache/$hash.lock"
flock 9 # another run of the same inputs finishes first; then its output is used
if [[ -f $out/manifest.json ]]; then
  echo "$out"
  exit 0
fi

start=$SECONDS
rm -rf "$out" # a run that died half-way
build="$cache/build-$hash"
mkdir -p "$build" "$out"

# build: compile against every line's Flink and write each line's classpath, in one Maven run;
# offline first.
build() {
  local args=(-B -ntp -q -f "$here/pom.xml" -Dflinkgen.build="$build" dependency:build-classpath compile)
  mvn -o "${args[@]}" >"$build/mvn.log" 2>&1 && return
  log "Maven's cache lacks an artifact; resolving online"
  mvn "${args[@]}" >"$build/mvn.log" 2>&1 || { cat "$build/mvn.log" >&2; return 1; }
}

# classpath LINE: the generator's classes and that line's Flink.
classpath() { echo "$build/$1/classes:$(cat "$build/$1.classpath")"; }

# generate LINE: run that line's jobs; OUT/LINE/cases.json when it succeeds.
generate() {
  local line=$1
  nice -n 10 "$java" @"$here/jvm.opts" -Xmx768m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -Dlog4j2.configurationFile="$here/log4j2.properties" \
    -cp "$(classpath "$line")" \
    io.github.kcleanup.flinkgen.Generate line "$line" "$out" >"$build/$line.log" 2>&1 ||
    { grep -v '^[[:space:]]*at ' "$build/$line.log" | tail -40 >&2; return 1; }
  grep '^flinkgen:' "$build/$line.log" | tail -1 >&2 || true
}

log "generating into $out"
build
log "built in $((SECONDS - start)) s"
# The lines run side by side: each spends most of its time waiting on its jobs.
pids=()
for line in "${lines[@]}"; do
  generate "$line" &
  pids+=($!)
done
failed=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { log "${lines[$i]} failed (logs in $build)"; failed=1; }
done
[[ $failed == 0 ]] || exit 1

"$java" -cp "$(classpath "${lines[0]}")" \
  io.github.kcleanup.flinkgen.Generate merge "$out" "${lines[@]}"
rm -rf "$build"
log "$(grep -c '"name"' "$out/manifest.json") cases in $((SECONDS - start)) s"
echo "$out"
