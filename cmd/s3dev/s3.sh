#!/usr/bin/env bash
# A real S3-compatible server for development and tests: S3Proxy (org.gaul:s3proxy) from Maven
# Central on its filesystem backend, with AWS signature v2/v4 authentication. Needs Java 17+
# and Maven; no Docker. It starts in about 2.5 s.
#
#   s3.sh up          start the server (or reuse the running one); prints its endpoint URL
#   s3.sh down        stop it and delete its data (after the test runs still using it)
#   s3.sh env         print the variables `test` exports, as shell assignments
#   s3.sh test CMD... run CMD with KCLEANUP_TEST_S3 (the endpoint URL),
#                     KCLEANUP_TEST_S3_ACCESS_KEY_ID and KCLEANUP_TEST_S3_SECRET_ACCESS_KEY set,
#                     starting the server if needed
#
# State: the jars in .cache/s3proxy/<version>/lib; the running server in .s3/server/ (its
# properties, data under data/ with one folder per bucket, log, pid, credentials) and its
# endpoint in .s3/endpoint. The access key is fixed; the secret is new at every start.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
version=$(sed -n 's:.*<s3proxy.version>\(.*\)</s3proxy.version>.*:\1:p' "$here/pom.xml")
lib="$root/.cache/s3proxy/$version/lib"
state="$root/.s3"
server="$state/server"
java="${JAVA_HOME:+$JAVA_HOME/bin/}java"
access_key=kcleanup-dev

die() { echo "s3.sh: $*" >&2; exit 1; }
log() { echo "s3.sh: $*" >&2; }

# lock serialises up and down between users of the same checkout; unlock ends it.
lock() { mkdir -p "$state"; exec 9>"$state/lock"; flock 9; }
unlock() { flock -u 9; }

# fetch_jars resolves the pinned release once; the rename makes a half-done download invisible.
fetch_jars() {
  [[ -d $lib ]] && return
  command -v mvn >/dev/null || die "Maven is needed to download S3Proxy $version (or set KCLEANUP_TEST_S3 to an existing S3-compatible server)"
  log "downloading S3Proxy $version from Maven Central into ${lib#"$root/"}"
  mkdir -p "$(dirname "$lib")"
  local tmp="$lib.tmp.$$"
  if ! mvn -q -B -ntp -f "$here/pom.xml" \
    org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$tmp" >"$tmp.log" 2>&1; then
    cat "$tmp.log" >&2
    rm -rf "$tmp" "$tmp.log"
    die "Maven could not resolve S3Proxy $version"
  fi
  rm -f "$tmp.log"
  mv "$tmp" "$lib" 2>/dev/null || rm -rf "$tmp" # another user finished first: keep theirs
}

check_java() {
  local v
  command -v "$java" >/dev/null || die "Java 17 or newer is needed (none found; set JAVA_HOME)"
  v=$("$java" -XshowSettings:properties -version 2>&1 | sed -n 's/ *java.specification.version = //p')
  [[ ${v%%.*} -ge 17 ]] 2>/dev/null || die "Java 17 or newer is needed, found $v (set JAVA_HOME)"
}

# our_server prints the pid of the server this checkout started, if that process still runs.
our_server() {
  local pid
  pid=$(cat "$server/pid" 2>/dev/null) || return 1
  # A recycled pid belongs to someone else: it must be our java with our properties.
  ps -o args= -p "$pid" 2>/dev/null | grep -qF -- "--properties $server/s3proxy.conf" || return 1
  echo "$pid"
}

# free_port prints a port below the ephemeral range on which nothing listens.
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 12000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
}

# answers ENDPOINT: any HTTP answer (an anonymous request gets 403) means the server listens;
# without curl, an accepted connection.
answers() {
  local code
  if command -v curl >/dev/null; then
    code=$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$1/" 2>/dev/null) || true
    [[ $code != 000 && -n $code ]]
    return
  fi
  local hostport=${1#http://}
  (exec 3<>"/dev/tcp/${hostport%:*}/${hostport##*:}") 2>/dev/null
}

# up OWNER: OWNER is "user" (s3.sh up: stays until s3.sh down) or "test" (s3.sh test: the
# last test run to finish stops it).
up() {
  lock
  local pid endpoint
  if pid=$(our_server); then
    endpoint=$(cat "$state/endpoint")
    answers "$endpoint" || die "S3Proxy pid $pid runs but does not answer at $endpoint; see ${server#"$root/"}/log or run: $0 down"
    [[ $1 == user ]] && rm -f "$server/owned-by-test"
    log "reusing the S3 server at $endpoint (pid $pid)"
    echo "$endpoint"
    unlock
    return
  fi
  rm -rf "$server" "$state/endpoint" # leftovers of a server that died
  check_java
  fetch_jars
  mkdir -p "$server/data"
  local port secret
  port=$(free_port)
  endpoint="http://127.0.0.1:$port"
  secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
  cat >"$server/s3proxy.conf" <<CONF
s3proxy.endpoint=$endpoint
s3proxy.authorization=aws-v2-or-v4
s3proxy.identity=$access_key
s3proxy.credential=$secret
jclouds.provider=filesystem
jclouds.filesystem.basedir=$server/data
CONF
  printf '%s\n%s\n' "$access_key" "$secret" >"$server/credentials"
  chmod 600 "$server/s3proxy.conf" "$server/credentials"
  [[ $1 == test ]] && touch "$server/owned-by-test"
  # setsid: the server outlives this script and a Ctrl-C of the test run that started it.
  setsid "$java" -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
    -Dlogback.configurationFile="$here/logback.xml" -cp "$lib/*" \
    org.gaul.s3proxy.Main --properties "$server/s3proxy.conf" >"$server/log" 2>&1 </dev/null &
  echo $! >"$server/pid"
  pid=$!
  for _ in $(seq 1 300); do # 60 seconds
    if answers "$endpoint"; then
      echo "$endpoint" >"$state/endpoint"
      log "S3Proxy $version listens at $endpoint (pid $pid, data in ${server#"$root/"}/data)"
      echo "$endpoint"
      unlock
      return
    fi
    kill -0 "$pid" 2>/dev/null || { cat "$server/log" >&2; die "S3Proxy exited during start"; }
    sleep 0.2
  done
  tail -20 "$server/log" >&2
  die "S3Proxy did not answer at $endpoint within 60 s"
}

# down stops the server, unless s3.sh test runs still use it: then the last of them will.
down() {
  mkdir -p "$state"
  exec 8>"$state/users.lock"
  flock -s 8
  lock
  [[ ! -d $server ]] || touch "$server/owned-by-test"
  unlock
  if flock -x -n 8; then
    stop
  else
    log "test runs (s3.sh test) still use the server: the last of them stops it"
  fi
}

stop() {
  lock
  local pid
  if pid=$(our_server); then
    kill -TERM "$pid"
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    kill -KILL "$pid" 2>/dev/null || true
    log "stopped the S3 server (pid $pid)"
  else
    log "no S3 server running"
  fi
  rm -rf "$server" "$state/endpoint"
  unlock
}

print_env() {
  local endpoint
  endpoint=$(cat "$state/endpoint" 2>/dev/null) || die "no S3 server: run '$0 up'"
  { read -r key; read -r secret; } <"$server/credentials"
  printf 'KCLEANUP_TEST_S3=%s\nKCLEANUP_TEST_S3_ACCESS_KEY_ID=%s\nKCLEANUP_TEST_S3_SECRET_ACCESS_KEY=%s\n' "$endpoint" "$key" "$secret"
}

# test_cmd holds a shared lock on .s3/users.lock while CMD runs: a server that a test run
# started (or that s3.sh down was asked to stop meanwhile) is stopped by the last test run to
# finish, never under another one's feet.
test_cmd() {
  [[ $# -ge 1 ]] || die "usage: $0 test CMD [ARGS...]"
  if [[ -n ${KCLEANUP_TEST_S3:-} ]]; then
    exec "$@"
  fi
  mkdir -p "$state"
  exec 8>"$state/users.lock"
  flock -s 8
  KCLEANUP_TEST_S3=$(up test)
  { read -r KCLEANUP_TEST_S3_ACCESS_KEY_ID; read -r KCLEANUP_TEST_S3_SECRET_ACCESS_KEY; } <"$server/credentials"
  export KCLEANUP_TEST_S3 KCLEANUP_TEST_S3_ACCESS_KEY_ID KCLEANUP_TEST_S3_SECRET_ACCESS_KEY
  trap release EXIT # also on failure or Ctrl-C; the exit status stays CMD's
  "$@"
}

release() {
  if flock -x -n 8 && [[ -f $server/owned-by-test ]]; then
    stop
  fi
}

case ${1:-} in
up) up user ;;
down) down ;;
env) print_env ;;
test) shift; test_cmd "$@" ;;
*) die "usage: $0 up | down | env | test CMD [ARGS...]" ;;
esac
