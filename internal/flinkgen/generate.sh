#!/usr/bin/env bash
# Generates real Flink checkpoints and savepoints holding recovery markers (issue 31), with what
# Flink's State Processor API reads from each. See docs/testing.md.
#
#   generate.sh                      the test cases: prints the directory holding manifest.json
#   generate.sh b9                   benchmark B9's checkpoint: prints the directory holding b9.json
#   generate.sh peer-read PATH UID [RUNS]
#                                    B9's peer row: Flink 2.2's State Processor API reads UID's
#                                    recoveryMarker from PATH; one JSON line per run on stdout
#
# A directory is printed as the last line on stdout; progress goes to stderr. The output is
# cached by a hash of every file in this directory (but *.md and target/):
#   ${KCLEANUP_CACHE:-$HOME/.cache/kcleanup}/flinkgen/<hash>/manifest.json
#   ${KCLEANUP_CACHE:-$HOME/.cache/kcleanup}/flinkgen/b9-<hash>/b9.json
# so a second run prints the directory at once. A directory counts only once that file is in it
# (written last, by a rename): retained checkpoints hold absolute file paths, so the snapshots
# are written where they stay, and a half-written directory is removed and made anew.
#
# Needs Java 17+ and Maven; Maven runs offline when its cache has every artifact, else online.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lines=(flink-1.20 flink-2.0 flink-2.2) # modules of pom.xml
java="${JAVA_HOME:+$JAVA_HOME/bin/}java"

die() { echo "flinkgen: $*" >&2; exit 1; }
log() { echo "flinkgen: $*" >&2; }

mode=${1:-cases}
case $mode in
  cases | b9 | peer-read) ;;
  *) die "unknown mode '$mode': generate.sh [b9 | peer-read PATH UID [RUNS]]" ;;
esac

# target/ is where a plain `mvn compile` here would write: not an input.
hash=$(cd "$here" && find . -path ./target -prune -o -type f ! -name '*.md' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
cache="${KCLEANUP_CACHE:-$HOME/.cache/kcleanup}/flinkgen"
build="$cache/build-$hash"
case $mode in
  cases) out="$cache/$hash" done_file=manifest.json ;;
  b9) out="$cache/b9-$hash" done_file=b9.json ;;
  peer-read) out= done_file= ;;
esac

if [[ -n $out && -f $out/$done_file ]]; then
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
if [[ -n $out && -f $out/$done_file ]]; then
  echo "$out"
  exit 0
fi

start=$SECONDS

# build: compile against every line's Flink and write each line's classpath, in one Maven run,
# offline first; kept (classes and classpaths only) for the other modes.
build() {
  [[ -f $build/built ]] && return
  rm -rf "$build"
  mkdir -p "$build"
  local args=(-B -ntp -q -f "$here/pom.xml" -Dflinkgen.build="$build" dependency:build-classpath compile)
  if ! mvn -o "${args[@]}" >"$build/mvn.log" 2>&1; then
    log "Maven's cache lacks an artifact; resolving online"
    mvn "${args[@]}" >"$build/mvn.log" 2>&1 || { cat "$build/mvn.log" >&2; return 1; }
  fi
  touch "$build/built"
  log "built in $((SECONDS - start)) s"
}

# classpath LINE: the generator's classes and that line's Flink.
classpath() { echo "$build/$1/classes:$(cat "$build/$1.classpath")"; }

# run LINE HEAP CLASS ARGS...: a generator main class on that line's Flink, quiet logging.
run() {
  local line=$1 heap=$2
  shift 2
  nice -n 10 "$java" @"$here/jvm.opts" "-Xmx$heap" -XX:+UseSerialGC \
    -Dlog4j2.configurationFile="$here/log4j2.properties" -cp "$(classpath "$line")" "$@"
}

# generate LINE: run that line's jobs; OUT/LINE/cases.json when it succeeds.
generate() {
  local line=$1
  run "$line" 768m -XX:TieredStopAtLevel=1 io.github.kcleanup.flinkgen.Generate line "$line" "$out" \
    >"$build/$line.log" 2>&1 ||
    { grep -v '^[[:space:]]*at ' "$build/$line.log" | tail -40 >&2; return 1; }
  grep '^flinkgen:' "$build/$line.log" | tail -1 >&2 || true
}

build
case $mode in
  peer-read)
    shift
    [[ $# -ge 2 ]] || die "usage: generate.sh peer-read PATH UID [RUNS]"
    exec 9>&- # reading needs no lock
    run flink-2.2 1g io.github.kcleanup.flinkgen.ReadTiming "$@" 2>"$build/peer-read.log"
    ;;
  b9)
    rm -rf "$out" # a run that died half-way
    mkdir -p "$out"
    log "generating B9's checkpoint into $out"
    # 100 keyed operators at 8 subtasks for real, rescaled to 128 (BigCheckpoint's comment says how).
    run flink-2.2 2g io.github.kcleanup.flinkgen.BigCheckpoint 8 100 "$out" 128 \
      >"$build/b9.out" 2>"$build/b9.log" ||
      { grep -v '^[[:space:]]*at ' "$build/b9.log" | tail -40 >&2; exit 1; }
    grep '^b9:' "$build/b9.log" >&2 || true
    chk=$(tail -n 1 "$build/b9.out")
    printf '{"path":"%s","uid":"action-state-markers","parallelism":128,"keyedOperators":100,"metadataBytes":%d,"flinkVersion":"2.2.0"}\n' \
      "${chk#"$out/"}" "$(stat -c %s "$chk/_metadata")" >"$out/b9.json.tmp"
    mv "$out/b9.json.tmp" "$out/b9.json"
    log "B9's checkpoint in $((SECONDS - start)) s"
    echo "$out"
    ;;
  cases)
    rm -rf "$out" # a run that died half-way
    mkdir -p "$out"
    log "generating into $out"
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
    "$java" -cp "$(classpath "${lines[0]}")" io.github.kcleanup.flinkgen.Generate merge "$out" "${lines[@]}"
    log "$(grep -c '"name"' "$out/manifest.json") cases in $((SECONDS - start)) s"
    echo "$out"
    ;;
esac
