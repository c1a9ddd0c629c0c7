#!/usr/bin/env bash
# A real, single-node Apache Kafka broker (or a three-broker cluster) for development and tests,
# from Maven Central.
# Needs Java 17+, Maven and Go; no Docker.
#
#   kafka.sh up              start a broker (or reuse the running one); prints host:port
#   kafka.sh down            stop it and delete its data (after the test runs still using it)
#   kafka.sh cli TOOL ARGS   run one of Kafka's own tools (kafka-topics, kafka-configs, ...)
#   kafka.sh test CMD...     run CMD with KCLEANUP_TEST_BOOTSTRAP set, starting a broker if needed
#
#   kafka.sh up --brokers 3, down --brokers 3, test --brokers 3 CMD...: the same for a
#   three-broker cluster (.kafka/cluster/; tests see KCLEANUP_TEST_CLUSTER, its directory)
#   kafka.sh node stop|kill|start|wipe ID   act on one broker of that cluster (ID 1..3)
#   KAFKA_CLUSTER_LINKS=N kafka.sh up --brokers 3: each broker also gets N proxied client
#   listeners (LINKA, LINKB, ...) for the network-fault tests (.kafka/cluster/links; default 0)
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

# only_std_fds runs a command with no descriptor open but stdin, stdout and stderr: a broker
# outlives the shell that started it and must hold none of its files — our locks, and whatever
# the caller had open (a broker started under `flock LOCK make kafka-up` held the caller's lock
# for as long as it ran).
only_std_fds() {
  local fd
  for fd in /proc/$BASHPID/fd/*; do
    fd=${fd##*/}
    [[ $fd =~ ^[0-9]+$ && $fd -gt 2 ]] && eval "exec $fd>&-" 2>/dev/null
  done
  exec "$@"
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
  run_java kafka.tools.StorageTool format --cluster-id="$cluster_id" -c "$broker/server.properties" \
    --add-scram "SCRAM-SHA-512=[name=admin,password=$admin_pw]" \
    --add-scram "SCRAM-SHA-256=[name=admin,password=$admin_pw]" \
    >"$broker/logs/format.log" 2>&1 || { cat "$broker/logs/format.log" >&2; die "formatting the storage failed"; }

  log "starting Apache Kafka $version at $addr (logs: ${broker#"$root/"}/logs/server.log)"
  # C1 only (TieredStopAtLevel=1): on two busy cores the broker starts in seconds instead of
  # half a minute, and a test broker never runs long enough to miss C2.
  # shellcheck disable=SC2086 # KAFKA_HEAP_OPTS is a list of JVM flags
  only_std_fds nohup "$java" ${KAFKA_HEAP_OPTS:--Xmx1g -Xms256m} -XX:TieredStopAtLevel=1 -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$here/log4j2-broker.properties" -Dkafka.logs.dir="$broker/logs" \
    -cp "$lib/*" kafka.Kafka "$broker/server.properties" \
    >"$broker/logs/stdout.log" 2>&1 </dev/null &
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


# ---- The three-broker cluster (kafka.sh up --brokers 3) --------------------------------------
# Three KRaft brokers (node ids 1..3) and one controller (node 0, a quorum of one) under
# .kafka/cluster/, each in a JVM of its own, PLAINTEXT only, with ports of their own: it runs
# beside the single-node broker, never touches it, and keeps its ports across node restarts.
# The controller is apart so that stopping two brokers still leaves a controller that fences
# them and shrinks the ISR (docs/testing.md). .kafka/cluster/bootstrap lists the three brokers;
# .kafka/cluster/kafka.sh names this script, which tests call for node operations
# (internal/kafkatest.Cluster). Each JVM is small (-Xmx256m, 128m for the controller, SerialGC,
# C1 only): four fit on two cores beside the tests.
#
# KAFKA_CLUSTER_LINKS=N (0 by default) gives each broker N more PLAINTEXT client listeners,
# LINKA, LINKB, ...: listener LINKx of node I listens on a port of its own and advertises another
# one, on which the network-fault tests (internal/clustertest/netfault) run a TCP proxy to it. A
# client bootstrapped through LINKx's proxies learns only LINKx's proxied addresses, so all its
# bytes cross those proxies, while inter-broker and controller traffic stays direct.
# .kafka/cluster/links has a line "LINKx NODE LISTEN_ADDR ADVERTISED_ADDR" per listener.
cluster="$state/cluster"
cluster_size=3
cluster_links="${KAFKA_CLUSTER_LINKS:-0}"

cluster_lock() { mkdir -p "$state"; exec 9>"$state/cluster.lock"; flock 9; }

# node_pid ID prints the pid of node ID, if that process still runs (and is ours).
node_pid() {
  local pid
  pid=$(cat "$cluster/node$1/pid" 2>/dev/null) || return 1
  ps -o args= -p "$pid" 2>/dev/null | grep -qF "kafka.Kafka $cluster/node$1/server.properties" || return 1
  echo "$pid"
}

node_addr() { echo "127.0.0.1:$(cat "$cluster/node$1/port")"; }

# node_launch ID formats node ID's storage when it is empty (new, or wiped) and starts its JVM.
node_launch() {
  local id=$1 dir="$cluster/node$1" pid
  mkdir -p "$dir/data" "$dir/logs"
  if [[ ! -f $dir/data/meta.properties ]]; then
    run_java kafka.tools.StorageTool format --cluster-id="$(cat "$cluster/cluster-id")" -c "$dir/server.properties" \
      >"$dir/logs/format.log" 2>&1 || { cat "$dir/logs/format.log" >&2; die "formatting node $id's storage failed"; }
  fi
  local heap=${KAFKA_CLUSTER_HEAP_OPTS:--Xmx256m -Xms64m}
  [[ $id == 0 ]] && heap="-Xmx128m -Xms32m"
  # shellcheck disable=SC2086 # heap is a list of JVM flags
  only_std_fds nohup "$java" $heap -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
    -XX:CICompilerCount=1 -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$here/log4j2-broker.properties" -Dkafka.logs.dir="$dir/logs" \
    -cp "$lib/*" kafka.Kafka "$dir/server.properties" \
    >>"$dir/logs/stdout.log" 2>&1 </dev/null &
  pid=$!
  disown "$pid" # a node killed on purpose is no job of ours to report
  echo "$pid" >"$dir/pid"
}

# node_wait ID waits until node ID answers and the cluster lists every running broker.
node_wait() {
  local pid id running=0
  pid=$(cat "$cluster/node$1/pid")
  for id in $(seq 1 "$cluster_size"); do node_pid "$id" >/dev/null && running=$((running + 1)); done
  if ! waitkafka -timeout "$start_timeout" -pid "$pid" -brokers "$running" "$(node_addr "$1")"; then
    echo "---- last lines of ${cluster#"$root/"}/node$1/logs:" >&2
    tail -n 40 "$cluster/node$1"/logs/*.log >&2 || true
    die "node $1 did not start; its files are kept in ${cluster#"$root/"}/node$1 (run: $0 down --brokers $cluster_size)"
  fi
}

# node_signal ID SIGNAL stops node ID with SIGNAL (TERM: a clean shutdown, KILL: a crash) and
# waits until the process is gone.
node_signal() {
  local pid
  pid=$(node_pid "$1") || { log "node $1 is not running"; return 0; }
  kill "-$2" "$pid"
  for _ in $(seq 1 150); do # 30 seconds for a clean shutdown, then KILL
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  kill -KILL "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  log "node $1 stopped (SIG$2, pid $pid)"
}

cluster_running() {
  local id
  for id in $(seq 0 "$cluster_size"); do node_pid "$id" >/dev/null || return 1; done
}

# cluster_up OWNER: as up, for the cluster.
cluster_up() {
  cluster_lock
  if cluster_running; then
    waitkafka -timeout 30s -brokers "$cluster_size" "$(node_addr 1)" >/dev/null 2>&1 ||
      die "the cluster's nodes run but do not answer; see ${cluster#"$root/"}/node*/logs/server.log or run: $0 down --brokers $cluster_size"
    [[ $1 == user ]] && rm -f "$cluster/owned-by-test"
    log "reusing the cluster at $(cat "$cluster/bootstrap")"
    cat "$cluster/bootstrap"
    unlock
    return
  fi
  cluster_kill_all # leftovers of a cluster that died
  rm -rf "$cluster"
  check_java
  fetch_jars
  command -v go >/dev/null || die "Go is needed to check that the cluster answers"
  mkdir -p "$cluster"
  local id ports=() voters addrs=""
  for id in $(seq 0 "$cluster_size"); do
    local p
    p=$(free_port)
    while [[ " ${ports[*]} " == *" $p "* ]]; do p=$(free_port); done
    ports+=("$p")
  done
  voters="0@127.0.0.1:${ports[0]}"
  mkdir -p "$cluster/node0"
  echo "${ports[0]}" >"$cluster/node0/controller-port"
  sed -e "s|@NODE_ID@|0|g" -e "s|@VOTERS@|$voters|g" -e "s|@CONTROLLER_PORT@|${ports[0]}|g" \
    -e "s|@DATA_DIR@|$cluster/node0/data|g" "$here/cluster-controller.properties.in" >"$cluster/node0/server.properties"
  [[ $cluster_links =~ ^[0-9]$ ]] || die "KAFKA_CLUSTER_LINKS takes 0..9 (proxied client listeners per broker), not '$cluster_links'"
  : >"$cluster/links"
  for id in $(seq 1 "$cluster_size"); do
    mkdir -p "$cluster/node$id"
    echo "${ports[$id]}" >"$cluster/node$id/port"
    addrs+="${addrs:+,}127.0.0.1:${ports[$id]}"
    local li listen adv name lls="" lad="" lpr=""
    for li in $(seq 1 "$cluster_links"); do
      name="LINK$(printf "\\x$(printf %x $((64 + li)))")"
      listen=$(free_port)
      while [[ " ${ports[*]} " == *" $listen "* ]]; do listen=$(free_port); done
      ports+=("$listen")
      adv=$(free_port)
      while [[ " ${ports[*]} " == *" $adv "* ]]; do adv=$(free_port); done
      ports+=("$adv")
      lls+=",$name://127.0.0.1:$listen"
      lad+=",$name://127.0.0.1:$adv"
      lpr+=",$name:PLAINTEXT"
      echo "$name $id 127.0.0.1:$listen 127.0.0.1:$adv" >>"$cluster/links"
    done
    sed -e "s|@NODE_ID@|$id|g" -e "s|@VOTERS@|$voters|g" -e "s|@PORT@|${ports[$id]}|g" \
      -e "s|@LINK_LISTENERS@|$lls|g" -e "s|@LINK_ADVERTISED@|$lad|g" -e "s|@LINK_PROTOCOLS@|$lpr|g" \
      -e "s|@DATA_DIR@|$cluster/node$id/data|g" "$here/cluster.properties.in" >"$cluster/node$id/server.properties"
  done
  head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=' >"$cluster/cluster-id"
  [[ $1 == test ]] && touch "$cluster/owned-by-test"
  log "starting a $cluster_size-broker Apache Kafka $version cluster at $addrs (logs: ${cluster#"$root/"}/node*/logs/)"
  for id in $(seq 0 "$cluster_size"); do node_launch "$id"; done
  for id in $(seq 1 "$cluster_size"); do node_wait "$id"; done
  echo "$here/kafka.sh" >"$cluster/kafka.sh"
  echo "$addrs" >"$cluster/bootstrap"
  log "cluster ready at $addrs"
  echo "$addrs"
  unlock
}

cluster_kill_all() {
  local id
  for id in $(seq 0 "$cluster_size"); do node_signal "$id" KILL >/dev/null 2>&1 || true; done
}

cluster_stop() {
  cluster_lock
  local id
  if [[ -d $cluster ]]; then
    for id in $(seq 1 "$cluster_size"); do node_signal "$id" TERM & done
    wait
    node_signal 0 TERM # the controller last: brokers shut down cleanly only while it answers
    log "stopped the cluster"
  else
    log "no cluster running"
  fi
  rm -rf "$cluster"
  unlock
}

# cluster_down: as down, for the cluster.
cluster_down() {
  mkdir -p "$state"
  exec 8>"$state/cluster-users.lock"
  flock -s 8
  [[ ! -d $cluster ]] || touch "$cluster/owned-by-test"
  if flock -x -n 8; then
    cluster_stop
  else
    log "test runs still use the cluster: the last of them stops it"
  fi
}

# node OP ID: stop (SIGTERM), kill (SIGKILL), start (and wait until it serves), wipe (delete a
# stopped node's data: the next start formats it anew and it re-replicates from the others).
node_op() {
  [[ $# -eq 2 && $2 =~ ^[0-9]+$ && $2 -ge 1 && $2 -le $cluster_size ]] ||
    die "usage: $0 node stop|kill|start|wipe ID (ID 1..$cluster_size)"
  [[ -f $cluster/cluster-id ]] || die "no cluster: run '$0 up --brokers $cluster_size'"
  case $1 in
  stop) node_signal "$2" TERM ;;
  kill) node_signal "$2" KILL ;;
  start)
    if ! node_pid "$2" >/dev/null; then node_launch "$2"; fi
    node_wait "$2"
    log "node $2 serves at $(node_addr "$2")"
    ;;
  wipe)
    node_pid "$2" >/dev/null && die "node $2 runs: stop or kill it first"
    rm -rf "$cluster/node$2/data"
    log "node $2's data deleted"
    ;;
  *) die "usage: $0 node stop|kill|start|wipe ID" ;;
  esac
}

# cluster_test CMD: as test_cmd, for the cluster; CMD sees KCLEANUP_TEST_CLUSTER (the cluster's
# directory: bootstrap, kafka.sh).
cluster_test() {
  [[ $# -ge 1 ]] || die "usage: $0 test --brokers $cluster_size CMD [ARGS...]"
  if [[ -n ${KCLEANUP_TEST_CLUSTER:-} ]]; then
    exec "$@"
  fi
  mkdir -p "$state"
  exec 8>"$state/cluster-users.lock"
  flock -s 8
  cluster_up test >/dev/null
  KCLEANUP_TEST_CLUSTER=$cluster
  export KCLEANUP_TEST_CLUSTER
  trap cluster_release EXIT
  "$@"
}

cluster_release() {
  if flock -x -n 8 && [[ -f $cluster/owned-by-test ]]; then
    cluster_stop
  fi
}

# brokers N: the --brokers flag; 1 (the default) is the single-node broker.
brokers() {
  [[ ${1:-} == --brokers ]] || { echo 1; return; }
  case ${2:-} in
  1 | "$cluster_size") echo "$2" ;;
  *) die "--brokers takes 1 or $cluster_size" ;;
  esac
}

n=$(brokers "${2:-}" "${3:-}")
case ${1:-} in
up) if [[ $n == 1 ]]; then up user; else cluster_up user; fi ;;
down) if [[ $n == 1 ]]; then down; else cluster_down; fi ;;
test) if [[ $n == 1 ]]; then shift && test_cmd "$@"; else shift 3 && cluster_test "$@"; fi ;;
node) shift && node_op "$@" ;;
cli) shift && cli "$@" ;;
*) die "usage: $0 up [--brokers 3] | down [--brokers 3] | test [--brokers 3] CMD [ARGS...] | node stop|kill|start|wipe ID | cli TOOL [ARGS...]" ;;
esac
