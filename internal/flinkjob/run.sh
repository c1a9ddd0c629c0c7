#!/usr/bin/env bash
# Builds (or reuses) and runs the Flink job in the loop (issue 32 item 4): a Flink 2.2 job on a
# MiniCluster writing action-state records to Kafka with recovery markers. See docs/testing.md.
#
#   run.sh build          build only; prints the build directory
#   run.sh ARGS...        exec the job: Job --bootstrap HOST:PORT --topic T --checkpoints DIR ...
#                         (io.github.kcleanup.flinkjob.Job's comment has the arguments and the
#                         commands it reads on stdin)
#
# The build is cached by a hash of this directory and the marker class it shares with
# internal/flinkgen: ${KCLEANUP_CACHE:-$HOME/.cache/kcleanup}/flinkjob/build-<hash>.
# Needs Java 17+ and Maven; Maven runs offline when its cache has every artifact, else online.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
marker=$here/../flinkgen/src/main/java/org/apache/flink/agents/runtime/actionstate/KafkaActionStateRecoveryMarker.java
java="${JAVA_HOME:+$JAVA_HOME/bin/}java"

die() { echo "flinkjob: $*" >&2; exit 1; }

hash=$( (cd "$here" && find . -path ./target -prune -o -type f ! -name '*.md' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum; sha256sum <"$marker") | sha256sum | cut -c1-16)
cache="${KCLEANUP_CACHE:-$HOME/.cache/kcleanup}/flinkjob"
build="$cache/build-$hash"

command -v "$java" >/dev/null || die "Java 17 or newer is needed (none found; set JAVA_HOME)"
v=$("$java" -XshowSettings:properties -version 2>&1 | sed -n 's/ *java.specification.version = //p')
[[ ${v%%.*} -ge 17 ]] 2>/dev/null || die "Java 17 or newer is needed, found $v (set JAVA_HOME)"
if [[ ! -f $build/built ]]; then
  command -v mvn >/dev/null || die "Maven is needed to build the job (apt-get install maven)"
  mkdir -p "$cache"
  exec 9>"$cache/$hash.lock"
  flock 9 # another run of the same inputs builds first; then its build is used
  if [[ ! -f $build/built ]]; then
    rm -rf "$build"
    mkdir -p "$build"
    args=(-B -ntp -q -f "$here/pom.xml" -Dflinkjob.build="$build" dependency:build-classpath compile)
    if ! mvn -o "${args[@]}" >"$build/mvn.log" 2>&1; then
      echo "flinkjob: Maven's cache lacks an artifact; resolving online" >&2
      mvn "${args[@]}" >"$build/mvn.log" 2>&1 || { cat "$build/mvn.log" >&2; exit 1; }
    fi
    touch "$build/built"
  fi
  exec 9>&-
fi

if [[ ${1:-} == build ]]; then
  echo "$build"
  exit 0
fi
exec "$java" @"$here/../flinkgen/jvm.opts" -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
  -Dlog4j2.configurationFile="$here/../flinkgen/log4j2.properties" \
  -cp "$build/classes:$(cat "$build/classpath")" io.github.kcleanup.flinkjob.Job "$@"
