#!/usr/bin/env bash
# A real, single-node Apache Kafka broker for development and tests, from Maven Central.
# Needs Java 17+, Maven and Go; no Docker.
#
#   kafka.sh up              start a broker (or reuse the running one); prints host:port
#   kafka.sh down            stop it and delete its data (after the test runs still using it)
#   kafka.sh cli TOOL ARGS   run one of Kafka's own tools (kafka-topics, kafka-configs, ...)
#   kafka.sh test CMD...     run CMD with KCLEANUP_TEST_BOOTSTRAP set, starting a broker if needed
#
# State: the jars in .cache/kafka/<version>/lib, the running broker in .kafka/broker/
# (config, data, logs/server.log, pid) and its address in .kafka/bootstrap. Besides PLAINTEXT
# the broker has a SASL_SSL listener (SCRAM-SHA-512, SCRAM-SHA-256, PLAIN) and an SSL listener
# that requires a client certificate; StandardAuthorizer with allow.everyone.if.no.acl.found=false.
# The PLAINTEXT principal (User:ANONYMOUS) and User:admin are super users. The CA and broker
# certificate are made once by internal/kafkatest/cmd/devcerts and cached in .kafka/tls/; the
# secured listeners' addresses and the admin's credentials are in .kafka/secure/ (docs/testing.md).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/pom.xml")
lib="$root/.cache/kafka/$version/lib"
state="$root/.kafka"
broker="$state/broker"
tls="$state/tls"       # CA and broker certificate, kept across restarts
secure="$state/secure" # the running broker's secured addresses and credentials
java="${JAVA_HOME:+$JAVA_HOME/bin/}java"
start_timeout="${KAFKA_DEV_START_TIMEOUT:-120s}"

die() { echo "kafka.sh: $*" >&2; exit 1; }
log() { echo "kafka.sh: $*" >&2; }

# lock serialises up and down between users of the same checkout; unlock ends it.
lock() { mkdir -p "$state"; exec 9>"$state/lock"; flock 9; }
unlock() { flock -u 9; }

# fetch_jars resolves the pinned release once; the rename makes a half-done download invisible.
fetch_jars() {
  [[ -d $lib ]] && return
  command -v mvn >/dev/null || die "Maven is needed to download Kafka $version (or set KCLEANUP_TEST_BOOTSTRAP to an existing broker)"
  log "downloading Apache Kafka $version from Maven Central into ${lib#"$root/"}"
  mkdir -p "$(dirname "$lib")"
  local tmp="$lib.tmp.$$"
  if ! mvn -q -B -ntp -f "$here/pom.xml" \
    org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$tmp" >"$tmp.log" 2>&1; then
    cat "$tmp.log" >&2
    rm -rf "$tmp" "$tmp.log"
    die "Maven could not resolve Kafka $version"
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

# run_java runs a Kafka main class from the cached jars with quiet tool logging.
run_java() {
  "$java" -Xmx512m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
    -Dlog4j2.configurationFile="$here/log4j2-tools.properties" -cp "$lib/*" "$@"
}

# waitkafka waits for a Metadata answer (internal/kafkatest/cmd/waitkafka; go build is cached).
waitkafka() {
  (cd "$root" && go build -o "$state/waitkafka" ./internal/kafkatest/cmd/waitkafka) || die "cannot build waitkafka"
  "$state/waitkafka" "$@"
}

# make_certs creates the CA and broker certificate once; the rename makes a half-written set
# invisible.
make_certs() {
  [[ -s $tls/ca.pem && -s $tls/ca-key.pem && -s $tls/broker.pem ]] && return
  (cd "$root" && go build -o "$state/devcerts" ./internal/kafkatest/cmd/devcerts) || die "cannot build devcerts"
  local tmp="$tls.tmp.$$"
  rm -rf "$tmp"
  "$state/devcerts" "$tmp" || die "cannot create the development CA and broker certificate"
  mv "$tmp" "$tls" 2>/dev/null || rm -rf "$tmp" # another user finished first: keep theirs
}

# secret prints a fresh random password (hex: safe in sed, properties and JAAS quoting).
secret() { head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'; }

# write_secure writes what tests and tools need to reach the secured listeners.
write_secure() {
  local sasl_port=$1 ssl_port=$2 admin_pw=$3 plain_pw=$4
  rm -rf "$secure"
  mkdir -p "$secure"
  chmod 700 "$secure"
  echo "127.0.0.1:$sasl_port" >"$secure/sasl_ssl"
  echo "127.0.0.1:$ssl_port" >"$secure/ssl"
  echo "$admin_pw" >"$secure/admin.password"
  echo "$plain_pw" >"$secure/plain-user.password"
  cp "$tls/ca.pem" "$tls/ca-key.pem" "$secure/"
  cat >"$secure/admin.properties" <<PROPS
# The development broker's super user over SASL_SSL (kafka.sh writes this at every start).
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="$admin_pw";
ssl.truststore.type=PEM
ssl.truststore.location=$secure/ca.pem
PROPS
}

# our_broker prints the pid of the broker this checkout started, if that process still runs.
our_broker() {
  local pid
  pid=$(cat "$broker/pid" 2>/dev/null) || return 1
  # A recycled pid belongs to someone else: it must be our java with our config.
  ps -o args= -p "$pid" 2>/dev/null | grep -qF "kafka.Kafka $broker/server.properties" || return 1
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

# up OWNER: OWNER is "user" (kafka.sh up: stays until kafka.sh down) or "test" (kafka.sh test:
# the last test run to finish stops it).
up() {
  lock
  local pid addr
  if pid=$(our_broker); then
    addr=$(cat "$state/bootstrap")
    waitkafka -timeout 15s "$addr" >/dev/null 2>&1 ||
      die "broker pid $pid runs but does not answer at $addr; see ${broker#"$root/"}/logs/server.log or run: $0 down"
    [[ $1 == user ]] && rm -f "$broker/owned-by-test"
    log "reusing the broker at $addr (pid $pid)"
    echo "$addr"
    unlock
    return
  fi
  rm -rf "$broker" "$state/bootstrap" # leftovers of a broker that died
  check_java
  fetch_jars
  command -v go >/dev/null || die "Go is needed to check that the broker answers"

  rm -rf "$secure"
  make_certs
  local port cport sasl_port ssl_port
  port=$(free_port)
  cport=$(free_port)
  while [[ $cport == "$port" ]]; do cport=$(free_port); done
  sasl_port=$(free_port)
  while [[ $sasl_port == "$port" || $sasl_port == "$cport" ]]; do sasl_port=$(free_port); done
  ssl_port=$(free_port)
  while [[ $ssl_port == "$port" || $ssl_port == "$cport" || $ssl_port == "$sasl_port" ]]; do ssl_port=$(free_port); done
  addr="127.0.0.1:$port"
  local admin_pw plain_pw
  admin_pw=$(secret)
  plain_pw=$(secret)
  mkdir -p "$broker/data" "$broker/logs"
  sed -e "s|@PORT@|$port|g" -e "s|@CONTROLLER_PORT@|$cport|g" -e "s|@DATA_DIR@|$broker/data|g" \
    -e "s|@SASL_SSL_PORT@|$sasl_port|g" -e "s|@SSL_PORT@|$ssl_port|g" -e "s|@TLS_DIR@|$tls|g" \
    -e "s|@ADMIN_PASSWORD@|$admin_pw|g" -e "s|@PLAIN_PASSWORD@|$plain_pw|g" \
    "$here/server.properties.in" >"$broker/server.properties"
  chmod 600 "$broker/server.properties"
  [[ $1 == test ]] && touch "$broker/owned-by-test"

  # A cluster ID is a Kafka UUID: 16 random bytes, URL-safe base64 without padding.
  local cluster_id
  cluster_id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
  # The admin's SCRAM credentials go into the bootstrap metadata: usable from the first second.
  run_java kafka.tools.StorageTool format -t "$cluster_id" -c "$broker/server.properties" \
    --add-scram "SCRAM-SHA-512=[name=admin,password=$admin_pw]" \
    --add-scram "SCRAM-SHA-256=[name=admin,password=$admin_pw]" \
    >"$broker/logs/format.log" 2>&1 || { cat "$broker/logs/format.log" >&2; die "formatting the storage failed"; }

  log "starting Apache Kafka $version at $addr (logs: ${broker#"$root/"}/logs/server.log)"
  # C1 only (TieredStopAtLevel=1): on two busy cores the broker starts in seconds instead of
  # half a minute, and a test broker never runs long enough to miss C2.
  # shellcheck disable=SC2086 # KAFKA_HEAP_OPTS is a list of JVM flags
  nohup "$java" ${KAFKA_HEAP_OPTS:--Xmx1g -Xms256m} -XX:TieredStopAtLevel=1 -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$here/log4j2-broker.properties" -Dkafka.logs.dir="$broker/logs" \
    -cp "$lib/*" kafka.Kafka "$broker/server.properties" \
    >"$broker/logs/stdout.log" 2>&1 </dev/null 8>&- 9>&- & # the JVM must not inherit our locks
  pid=$!
  echo "$pid" >"$broker/pid"

  if ! waitkafka -timeout "$start_timeout" -pid "$pid" "$addr"; then
    echo "---- last lines of ${broker#"$root/"}/logs:" >&2
    tail -n 40 "$broker"/logs/*.log >&2 || true
    kill -KILL "$pid" 2>/dev/null || true
    die "the broker did not start; its files are kept in ${broker#"$root/"} (run: $0 down)"
  fi
  write_secure "$sasl_port" "$ssl_port" "$admin_pw" "$plain_pw"
  echo "$addr" >"$state/bootstrap"
  log "ready at $addr (pid $pid); SASL_SSL at 127.0.0.1:$sasl_port, mTLS at 127.0.0.1:$ssl_port (${secure#"$root/"}/)"
  echo "$addr"
  unlock
}

# down stops the broker, unless kafka.sh test runs still use it: then the last of them will.
down() {
  mkdir -p "$state"
  exec 8>"$state/users.lock"
  flock -s 8 # join the users, so that none of them stops it while we mark it
  lock
  [[ ! -d $broker ]] || touch "$broker/owned-by-test"
  unlock
  if flock -x -n 8; then
    stop
  else
    log "test runs (kafka.sh test) still use the broker: the last of them stops it"
  fi
}

stop() {
  lock
  local pid
  if pid=$(our_broker); then
    kill -TERM "$pid"
    for _ in $(seq 1 100); do # 20 seconds for a clean shutdown, then KILL
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    kill -KILL "$pid" 2>/dev/null || true
    log "stopped the broker (pid $pid)"
  else
    log "no broker running"
  fi
  rm -rf "$broker" "$state/bootstrap" "$secure"
  unlock
}

# tool_class maps a tool's script name (as in Kafka's bin/) to its main class.
tool_class() {
  case $1 in
  kafka-topics) echo org.apache.kafka.tools.TopicCommand ;;
  kafka-configs) echo kafka.admin.ConfigCommand ;;
  kafka-get-offsets) echo org.apache.kafka.tools.GetOffsetShell ;;
  kafka-delete-records) echo org.apache.kafka.tools.DeleteRecordsCommand ;;
  kafka-console-producer) echo org.apache.kafka.tools.ConsoleProducer ;;
  kafka-console-consumer) echo org.apache.kafka.tools.consumer.ConsoleConsumer ;;
  kafka-consumer-groups) echo org.apache.kafka.tools.consumer.group.ConsumerGroupCommand ;;
  kafka-broker-api-versions) echo org.apache.kafka.tools.BrokerApiVersionsCommand ;;
  kafka-metadata-quorum) echo org.apache.kafka.tools.MetadataQuorumCommand ;;
  *) return 1 ;;
  esac
}

cli() {
  [[ $# -ge 1 ]] || die "usage: $0 cli TOOL [ARGS...]"
  local tool=$1 class
  shift
  class=$(tool_class "$tool") || die "unknown tool '$tool'; known: kafka-topics kafka-configs kafka-get-offsets kafka-delete-records kafka-console-producer kafka-console-consumer kafka-consumer-groups kafka-broker-api-versions kafka-metadata-quorum"
  local arg addr="${KCLEANUP_TEST_BOOTSTRAP:-}"
  for arg in "$@"; do [[ $arg == --bootstrap-server* ]] && addr=given; done
  if [[ $addr != given ]]; then
    [[ -n $addr ]] || addr=$(cat "$state/bootstrap" 2>/dev/null) ||
      die "no broker: run '$0 up' (make kafka-up) or pass --bootstrap-server"
    set -- --bootstrap-server "$addr" "$@"
  fi
  check_java
  fetch_jars
  run_java "$class" "$@"
}

# test_cmd holds a shared lock on .kafka/users.lock while CMD runs: a broker that a test run
# started (or that kafka.sh down was asked to stop meanwhile) is stopped by the last test run
# to finish, never under another one's feet.
test_cmd() {
  [[ $# -ge 1 ]] || die "usage: $0 test CMD [ARGS...]"
  if [[ -n ${KCLEANUP_TEST_BOOTSTRAP:-} ]]; then
    exec "$@"
  fi
  mkdir -p "$state"
  exec 8>"$state/users.lock"
  flock -s 8
  KCLEANUP_TEST_BOOTSTRAP=$(up test)
  KCLEANUP_TEST_SECURE=$secure # the secured listeners (internal/kafkatest.Secure)
  export KCLEANUP_TEST_BOOTSTRAP KCLEANUP_TEST_SECURE
  trap release EXIT # also on failure or Ctrl-C; the exit status stays CMD's
  "$@"
}

release() {
  if flock -x -n 8 && [[ -f $broker/owned-by-test ]]; then
    stop
  fi
}

case ${1:-} in
up) up user ;;
down) down ;;
cli) shift && cli "$@" ;;
test) shift && test_cmd "$@" ;;
*) die "usage: $0 up | down | cli TOOL [ARGS...] | test CMD [ARGS...]" ;;
esac
