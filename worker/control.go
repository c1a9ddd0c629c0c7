package worker

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
)

// ErrNotCaughtUp means a projection could not prove it has read the control
// topic to its end; nothing may be approved or deleted on its word.
var ErrNotCaughtUp = errors.New("projection is not caught up with the control topic")

// CreateControlTopic creates a control topic with one partition and the
// settings of docs/design.md §4. It reports false, and no error, when the topic exists.
// It returns once the broker's metadata shows the topic with a leader for every
// partition: a broker answers CreateTopics before its metadata has caught up,
// and a read or write in that gap would find no such topic.
func (c *Cluster) CreateControlTopic(ctx context.Context, name string, replicationFactor int16) (bool, error) {
	rf, err := c.replicationFactorFor(ctx, name, replicationFactor)
	if err != nil {
		return false, err
	}
	resp, err := c.adm.CreateTopic(ctx, 1, replicationFactor, ControlTopicConfigs(rf), name)
	if err == nil {
		err = resp.Err
	}
	created := err == nil
	if errors.Is(err, kerr.TopicAlreadyExists) {
		err = nil // possibly created a moment ago by a concurrent kcleanup: wait for it too
	}
	if err != nil {
		return false, c.createHint(ctx, errors.Wrapf(err, "create control topic %q", name))
	}
	return created, c.waitForLeaders(ctx, name)
}

// createHint is the operator's next step when a topic could not be created: a replication
// factor above the cluster's broker count says how many brokers there are and what to give
// instead; anything else is most often a missing permission.
func (c *Cluster) createHint(ctx context.Context, err error) error {
	if errors.Is(err, kerr.InvalidReplicationFactor) {
		if bs, lerr := c.adm.ListBrokers(ctx); lerr == nil && len(bs) > 0 {
			n := len(bs)
			return errors.WithHintf(err, "the cluster has %d broker(s): use --replication-factor %d (production clusters: 3)", n, min(n, 3))
		}
		return errors.WithHint(err, "the replication factor is larger than the cluster's broker count: give a smaller --replication-factor (production clusters: 3)")
	}
	return errors.WithHint(err, "check that the principal may create topics, or create it yourself with one partition and cleanup.policy=compact")
}

// replicationFactorFor is the replication factor a new topic called name
// gets: replicationFactor itself, or for -1 (the broker's
// default.replication.factor) the one the broker names when asked to
// validate the creation. Without it, -1 on a three-broker cluster made a
// control topic with three replicas and min.insync.replicas=1. When the
// topic exists already the answer does not matter (nothing is created):
// -1 then.
func (c *Cluster) replicationFactorFor(ctx context.Context, name string, replicationFactor int16) (int16, error) {
	if replicationFactor != -1 {
		return replicationFactor, nil
	}
	resp, err := c.adm.ValidateCreateTopics(ctx, 1, -1, nil, name)
	if err != nil {
		return 0, errors.WithHint(errors.Wrapf(err, "ask the broker which replication factor topic %q would get", name),
			"check that the principal may create topics, or give --replication-factor")
	}
	r, err := resp.On(name, nil)
	if err == nil {
		err = r.Err
	}
	if errors.Is(err, kerr.TopicAlreadyExists) {
		return -1, nil
	}
	if err != nil {
		return 0, errors.WithHint(errors.Wrapf(err, "ask the broker which replication factor topic %q would get", name),
			"check that the principal may create topics, or give --replication-factor")
	}
	return r.ReplicationFactor, nil
}

// waitForLeaders polls uncached metadata, on every broker, until every partition
// of topic has a leader, or ctx ends.
func (c *Cluster) waitForLeaders(ctx context.Context, topic string) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		// Every broker must know it: the next request may go to any of them (on a
		// three-broker cluster init's describe found the topic missing on another broker).
		brokers := c.cl.DiscoveredBrokers()
		led := len(brokers) > 0
		for _, b := range brokers {
			kr, err := b.Request(ctx, req)
			if err != nil {
				led = false
				break
			}
			resp := kr.(*kmsg.MetadataResponse)
			led = led && len(resp.Topics) == 1 && resp.Topics[0].ErrorCode == 0 && len(resp.Topics[0].Partitions) > 0
			for _, p := range resp.Topics[0:min(1, len(resp.Topics))] {
				for _, pp := range p.Partitions {
					led = led && pp.ErrorCode == 0 && pp.Leader >= 0
				}
			}
		}
		if led {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Wrapf(ctx.Err(), "wait for topic %q to have a leader", topic)
		case <-tick.C:
		}
	}
}

// Projection is a projector.State fed from a control topic. It reads with a
// dedicated consumer and knows how far it has read.
type Projection struct {
	// View is the pure read of the records folded so far: State, the
	// format, the Flink Agents fold, the foreign records (projector.View).
	*projector.View
	Topic string
	// Actor names this writer in the maintenance headers of its repairs
	// and retractions ("" is Actor()).
	Actor string
	// Next is the offset after the last record (or transaction marker) read.
	Next int64
	// End is the end offset captured at the start of the last CatchUp that
	// completed: the projection is caught up to at least End.
	End int64
	// AheadTolerance is how far a COMMITTED's "at" may run ahead of its
	// broker time before its status lists it (report.Source; 0: the
	// default, report.DefaultAheadTolerance).
	AheadTolerance time.Duration

	pauseIdle bool // PauseWhenIdle

	reader *kgo.Client // a consumer of the topic (OpenProjection); nil for a bounded read
	// source is what reads take records from: reader, or for a bounded
	// read (OpenBoundedProjection) a boundedFetcher.
	source interface {
		PollFetches(context.Context) kgo.Fetches
	}
	bounded *boundedFetcher
	cluster *Cluster
	// onVerdict, when set, sees every verdict the fold returns.
	onVerdict func(projector.Verdict)
	// decoders are decodeAll's, one per goroutine, kept across reads.
	decoders projector.Decoders
}

// Project opens a projection of a control topic and reads it to its end.
// opts configure its projector.State (projector.KeepAudit for history).
func (c *Cluster) Project(ctx context.Context, controlTopic string, opts ...projector.Option) (*Projection, error) {
	p, err := c.OpenProjection(controlTopic, opts...)
	if err != nil {
		return nil, err
	}
	if err := p.CatchUp(ctx); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// OpenProjection prepares a projection without reading anything yet.
func (c *Cluster) OpenProjection(controlTopic string, stateOpts ...projector.Option) (*Projection, error) {
	opts := append([]kgo.Opt{}, c.opts...)
	opts = append(opts,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{controlTopic: {0: kgo.NewOffset().AtStart()}}),
		// Aborted transactional writes never count as decisions.
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Transaction markers occupy offsets; without them a read could never
		// prove it reached the end.
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(500*time.Millisecond),
		// A quarter of the default: the fold keeps up with smaller fetches,
		// and the fetches decoded ahead of it were most of a long read's peak
		// heap (kcleanup status on 1M records: 263-280 -> 182-195 MB RSS, no
		// slower; docs/benchmarks.md, issue 23 round 4).
		kgo.FetchMaxPartitionBytes(256<<10),
	)
	reader, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, errors.Wrap(err, "create control-topic reader")
	}
	return &Projection{Topic: controlTopic, View: projector.NewView(stateOpts...), reader: reader, source: reader, cluster: c}, nil
}

// OpenBoundedProjection prepares a projection read with Fetch requests on
// the cluster's own client (a boundedFetcher), each CatchUp to the end it
// captures: no client of its own, so no connection, metadata load or
// background fetch for each read (the gate's fresh read, issue 23 item 6;
// an owner's control topic, of which a failover moves hundreds at once,
// B6). PauseWhenIdle is a no-op: it fetches nothing between reads.
func (c *Cluster) OpenBoundedProjection(controlTopic string) *Projection {
	f := c.newBoundedFetcher(controlTopic)
	return &Projection{Topic: controlTopic, View: projector.NewView(), source: f, bounded: f, cluster: c}
}

// PauseWhenIdle stops the reader's background fetching now and whenever a
// read reached the end, until the next read needs records: a replica that
// serves a thousand idle control topics then sends no fetch for them
// (docs/benchmarks.md, B6). A read resumes it first; with its one
// partition paused the reader has no fetch in flight to wait for.
func (p *Projection) PauseWhenIdle() {
	if p.reader == nil {
		return // a bounded read fetches nothing between reads
	}
	p.pauseIdle = true
	p.reader.PauseFetchPartitions(map[string][]int32{p.Topic: {0}})
}

// Close releases the projection's reader.
func (p *Projection) Close() {
	if p.reader != nil {
		p.reader.Close()
	}
}

// CatchUp reads until the projection has folded every record below the end
// offset captured when it began. It fails closed: on a deadline it returns
// ErrNotCaughtUp and the caller must not act on the state.
func (p *Projection) CatchUp(ctx context.Context) error {
	var wg sync.WaitGroup
	if p.bounded != nil && p.Next == 0 {
		// A bounded read's first fetch (and the leader to send it to) is
		// made while the end is asked; a failure is met again by the read.
		wg.Go(func() { p.bounded.prefetch(ctx) })
	}
	end, err := p.cluster.stableEnd(ctx, "control topic", p.Topic)
	wg.Wait()
	switch {
	case errors.Is(err, ErrTopicNotFound) || errors.Is(err, kerr.UnknownTopicOrPartition):
		return errors.WithHint(errors.Mark(errors.Newf("control topic %q does not exist", p.Topic), ErrTopicNotFound),
			"create it with: kcleanup init --topic <data topic> --control-topic "+p.Topic)
	case errors.Is(err, ErrNotCaughtUp):
		return err
	case err != nil:
		return p.cluster.denied(err, protocol.Permission{Operation: "Describe", ResourceType: "topic", Resource: p.Topic, For: "read the end of the control topic"})
	}
	return p.readTo(ctx, end)
}

// readTo reads and folds records until the projection has read below end.
// Fetching and decoding run one fetch ahead of the fold: while the fold
// consumes one batch (on this goroutine, in offset order), the next is
// polled and decoded on every core.
func (p *Projection) readTo(ctx context.Context, end int64) error {
	if p.pauseIdle {
		partition := map[string][]int32{p.Topic: {0}}
		if p.Next < end {
			p.reader.ResumeFetchPartitions(partition)
		}
		defer func() {
			if p.Next >= end {
				p.reader.PauseFetchPartitions(partition)
			}
		}()
	}
	if p.Next < end {
		ctx, cancel := context.WithCancel(ctx)
		batches := make(chan fetched, 1)
		var wg sync.WaitGroup
		wg.Go(func() { p.fetchDecode(ctx, p.Next, end, batches) })
		defer func() {
			cancel()
			for range batches { // let fetchDecode finish before the next read
			}
			wg.Wait()
		}()
		for b := range batches {
			for _, d := range b.decoded {
				var v projector.Verdict
				if p.onVerdict != nil {
					v = p.StepDecoded(d)
				} else {
					v = p.StepDecodedLean(d) // no detail text nobody reads
				}
				if p.onVerdict != nil {
					p.onVerdict(v)
				}
			}
			p.Next = b.next
			if b.err != nil {
				return b.err
			}
		}
		if p.Next < end {
			// Never claim a read that stopped short: fail closed.
			return errors.Mark(errors.Newf("control topic %q: read to offset %d of %d", p.Topic, p.Next, end), ErrNotCaughtUp)
		}
	}
	p.End = end
	return nil
}

// fetched is one fetch, decoded; next is the offset after it.
type fetched struct {
	decoded []projector.Decoded
	next    int64
	err     error
}

// fetchDecode polls from offset next until it has read below end, and sends
// every fetch decoded, then closes out. An error ends it, sent with the
// offset read so far.
func (p *Projection) fetchDecode(ctx context.Context, next, end int64, out chan<- fetched) {
	defer close(out)
	send := func(f fetched) bool {
		select {
		case out <- f:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for next < end {
		fs := p.source.PollFetches(ctx)
		if ctx.Err() != nil {
			// Not send: with ctx done it may drop the error. The reader
			// drains out until it is closed, so this cannot block for good.
			out <- fetched{next: next, err: errors.Mark(errors.Wrapf(ctx.Err(),
				"control topic %q: read to offset %d of %d", p.Topic, next, end), ErrNotCaughtUp)}
			return
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if ferr == nil {
				ferr = err
			}
		})
		if ferr != nil && !kerr.IsRetriable(ferr) {
			send(fetched{next: next, err: p.cluster.denied(errors.Wrapf(ferr, "read control topic %q", p.Topic), permControlRead(p.Topic))})
			return
		}
		var batch []projector.Record
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < next {
				return
			}
			next = r.Offset + 1
			if r.Attrs.IsControl() {
				return
			}
			batch = append(batch, projector.Record{Offset: r.Offset, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp,
				LogAppendTime: r.Attrs.TimestampType() == 1, Headers: headersOf(r)})
		})
		if !send(fetched{decoded: p.decodeAll(batch), next: next}) {
			return
		}
	}
}

// decodeAll decodes a batch of records on every core when it is large enough
// to pay for the goroutines, each with its own events.Decoder kept across
// fetches (projector.Decoders).
func (p *Projection) decodeAll(recs []projector.Record) []projector.Decoded {
	workers := runtime.GOMAXPROCS(0)
	if len(p.decoders) < workers {
		p.decoders = projector.NewDecoders(workers)
	}
	if len(recs) < 256 {
		return p.decoders[:1].DecodeAll(recs)
	}
	return p.decoders.DecodeAll(recs)
}

// Actor names the writer of a control record: host/pid unless set.
//
// The host name is made valid UTF-8 first (the kernel allows any bytes):
// events.Envelope.Validate refuses an actor that is not, because it would
// decode to another string than the one written.
func Actor() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d", strings.ToValidUTF8(host, "?"), os.Getpid())
}

// Append writes one control record and returns its offset. It does not wait
// for the verdict: see Decide.
func (c *Cluster) Append(ctx context.Context, controlTopic string, env events.Envelope, headers ...kgo.RecordHeader) (int64, error) {
	// Never write a record that reads back as another one (events.Envelope.Validate).
	// One encoding, checked and appended.
	key, value, err := env.EncodeValid()
	if err != nil {
		return 0, errors.Wrapf(err, "refuse to append %s to control topic %q", env.Event, controlTopic)
	}
	r := &kgo.Record{Topic: controlTopic, Partition: 0, Key: key, Value: value, Headers: headers}
	if err := produceWithin(ctx, c.cl, r); err != nil {
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			// The client never asks the broker to create a topic (Connect): a control topic is
			// made by kcleanup init, after its search for another that governs the data topic.
			return 0, errors.WithHintf(errors.Mark(errors.Wrapf(err, "append %s to control topic %q: it does not exist, and no writer creates one", key, controlTopic), protocol.ErrNoControlTopic),
				"run kcleanup init --topic <data topic> --control-topic %s (init refuses when another control topic governs the data topic: then name that one)", controlTopic)
		}
		return 0, c.denied(errors.Wrapf(err, "append %s to control topic %q", key, controlTopic),
			permControlWrite(controlTopic))
	}
	return r.Offset, nil
}

// produceWithin is ProduceSync bounded by ctx. franz-go's idempotent producer
// neither fails nor abandons a record once it is in flight (its sequence
// numbers), so a link that hangs without a reset held ProduceSync past any
// deadline (an apply with --timeout 3s still waiting after 150 s). At ctx's
// end it returns, the record perhaps appended later by the same producer, in
// order: a writer learns what it wrote only by reading it back (Decide), and
// a record written twice folds as a duplicate, which the protocol accepts.
func produceWithin(ctx context.Context, cl *kgo.Client, r *kgo.Record) error {
	done := make(chan error, 1)
	cl.Produce(ctx, r, func(_ *kgo.Record, err error) { done <- err })
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		select {
		case err := <-done: // answered as the deadline passed
			return err
		default:
			return errors.Wrap(ctx.Err(), "no acknowledgement (the record may still be appended)")
		}
	}
}

// Decide appends a record and reads the control topic until it has folded
// it, then returns the log's verdict on it: a writer learns whether its
// transition was accepted only by reading it back (docs/design.md §5).
func (p *Projection) Decide(ctx context.Context, env events.Envelope, headers ...kgo.RecordHeader) (projector.Verdict, error) {
	if err := p.writable(); err != nil {
		return projector.Verdict{}, err
	}
	off, err := p.cluster.Append(ctx, p.Topic, env, headers...)
	if err != nil {
		return projector.Verdict{}, err
	}
	var got *projector.Verdict
	prev := p.onVerdict
	p.onVerdict = func(v projector.Verdict) {
		if v.Offset == off {
			got = &v
		}
		if prev != nil {
			prev(v)
		}
	}
	defer func() { p.onVerdict = prev }()
	if err := p.readTo(ctx, off+1); err != nil {
		return projector.Verdict{}, err
	}
	if got == nil {
		return projector.Verdict{}, errors.Newf("control topic %q: record %d was not read back", p.Topic, off)
	}
	if err := p.Repair(ctx); err != nil {
		return *got, err
	}
	return *got, nil
}

// Repair keeps the compacted control topic equivalent to the full one
// (docs/design.md §5, I5): it re-appends every accepted record whose key a later
// record overwrote, so that compaction keeps the accepted value, and it
// tombstones every key whose records were all rejected (after
// protocol.RetractionGrace; a conflict's loser whose winner moved past it at once,
// before the repairs: projector.Retraction.Now), so that compaction cannot fold a rejected record in
// another order than the full log did. Then it reads its own writes back,
// so that a second call does not write them again. Which records, in which
// order, is protocol.Maintenance (the simulation appends the same).
//
// A control topic wholly in Flink Agents' format is never written (see
// writable). In a mixed one, kcleanup's own accepted records are still
// repaired, so that compaction cannot erase its history, but no record
// under a bare plan-ID key is ever tombstoned.
func (p *Projection) Repair(ctx context.Context) error {
	if p.Format() == projector.FormatFlinkAgents {
		return p.writable()
	}
	var recs []*kgo.Record
	for _, m := range protocol.Maintenance(p.State, time.Now(), protocol.RetractionGrace) {
		reason := fmt.Sprintf("re-appends the record accepted at offset %d: its key was overwritten, or a later copy moved it out of compaction-safe order", m.Offset)
		if m.Kind == projector.MaintenanceRetraction {
			reason = fmt.Sprintf("retracts a key whose every record was rejected (the latest at offset %d), so that compaction erases it", m.Offset)
		}
		recs = append(recs, &kgo.Record{Topic: p.Topic, Partition: 0, Key: m.Key, Value: m.Value, // nil value: tombstone
			Headers: p.maintenanceHeaders(m.Kind, reason)})
	}
	if len(recs) == 0 {
		return nil
	}
	// One at a time, in order: a repair's position relative to the others matters.
	for _, rec := range recs {
		if err := p.cluster.cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			return p.cluster.denied(errors.Wrapf(err, "repair key %q on control topic %q", rec.Key, p.Topic), permControlWrite(p.Topic))
		}
	}
	return p.readTo(ctx, recs[len(recs)-1].Offset+1)
}

// maintenanceHeaders say that this writer appended a record to keep the log
// safe to compact, and why (projector.HeaderMaintenance and the others):
// history, doctor, status and metrics show it as the fleet's maintenance.
// HeaderRead says how far this view had read: a fresh reader tells by it
// whether the writer of a pin's repair had read a commit that pin rejected
// (a pin dispute, docs/design.md §12).
func (p *Projection) maintenanceHeaders(kind, reason string) []kgo.RecordHeader {
	actor := p.Actor
	if actor == "" {
		actor = Actor()
	}
	return []kgo.RecordHeader{
		{Key: projector.HeaderMaintenance, Value: []byte(kind)},
		{Key: projector.HeaderActor, Value: []byte(actor)},
		{Key: projector.HeaderReason, Value: []byte(reason)},
		{Key: projector.HeaderRead, Value: []byte(strconv.FormatInt(p.Next, 10))},
	}
}

// headersOf converts a fetched record's headers for the fold.
func headersOf(r *kgo.Record) []projector.Header {
	if len(r.Headers) == 0 {
		return nil
	}
	out := make([]projector.Header, len(r.Headers))
	for i, h := range r.Headers {
		out[i] = projector.Header{Key: h.Key, Value: h.Value}
	}
	return out
}

// stableEnd captures the high watermark of partition 0 of a control topic and waits until the
// last stable offset reaches it. A read_committed reader stops at the last
// stable offset, and an open transaction (or one whose abort or commit
// markers have not landed yet: EndTxn returns before they are written) pins
// it below records appended after the transaction began, committed plans
// included. Reading only to the last stable offset could therefore miss a
// boundary; until every record below the captured end is decided the fold
// cannot be proven complete, and the answer is ErrNotCaughtUp (fail closed).
func (c *Cluster) stableEnd(ctx context.Context, kind, topic string) (int64, error) {
	lookup := func(what string, lo kadm.ListedOffsets, err error) (int64, error) {
		if err != nil {
			return 0, errors.Wrapf(err, "read the %s of %s %q", what, kind, topic)
		}
		o, ok := lo.Lookup(topic, 0)
		if !ok {
			return 0, errors.Mark(errors.Newf("%s %q has no partition 0", kind, topic), ErrTopicNotFound)
		}
		if o.Err != nil {
			return 0, errors.Wrapf(o.Err, "read the %s of %s %q", what, kind, topic)
		}
		return o.Offset, nil
	}
	// Right after a leader election the new leader answers OFFSET_NOT_AVAILABLE (or
	// NOT_LEADER) until its high watermark has caught up: a retriable answer, asked again
	// within the caller's deadline (a three-broker cluster showed it: internal/clustertest).
	var hw int64
	if err := askAgain(ctx, func(ctx context.Context) error {
		lo, err := c.adm.ListEndOffsets(ctx, topic)
		hw, err = lookup("high watermark", lo, err)
		return err
	}); err != nil {
		return 0, err
	}
	open := func(lso int64) error {
		return errors.Mark(errors.WithHintf(errors.Newf(
			"%s %q: a transaction is still open at offset %d (high watermark %d), so the records after it cannot be read yet",
			kind, topic, lso, hw), "wait for the writer's transaction to commit or abort (transaction.timeout.ms); kcleanup never writes a control topic in a transaction, so find the producer that does"), ErrNotCaughtUp)
	}
	// Markers of a transaction that just ended land within milliseconds; a
	// transaction still open after stableWait is reported, not waited out
	// (the caller's deadline may be much longer, and the answer is the same).
	wait, last := ctx, int64(-1)
	for {
		var lso int64
		err := askAgain(wait, func(ctx context.Context) error {
			lo, err := c.adm.ListCommittedOffsets(ctx, topic)
			lso, err = lookup("last stable offset", lo, err)
			return err
		})
		switch {
		case err != nil && last >= 0 && wait.Err() != nil:
			return 0, open(last)
		case err != nil:
			return 0, err
		case lso >= hw:
			return hw, nil
		}
		if last < 0 {
			var cancel context.CancelFunc
			wait, cancel = context.WithTimeout(ctx, stableWait)
			defer cancel()
		}
		last = lso
		select {
		case <-wait.Done():
			return 0, open(lso)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stableWait bounds how long stableEnd waits for an ended transaction's markers.
const stableWait = 2 * time.Second

// writable refuses every new event on a control topic that holds a record
// in Flink Agents' format: the job reads that topic, and one kcleanup record
// would make its recovery fail (in a mixed one the gate cannot tell, so
// nothing may be decided there either). A topic wholly in Flink Agents'
// format is audited, gated and adopted, never written (Repair too).
func (p *Projection) writable() error {
	n, first := p.FlinkRecords()
	if n == 0 {
		return nil
	}
	return errors.Mark(errors.WithHint(
		errors.Newf("control topic %q holds %d record(s) in Flink Agents' control format (the first at offset %d): kcleanup never writes to a control topic a Flink Agents job reads",
			p.Topic, n, first),
		"give kcleanup a control topic of its own, started from this one: kcleanup adopt --from "+p.Topic+" (docs/flink-agents.md)"), protocol.ErrBlocked)
}

// Source is what the status document of the projection is built from
// (report.StatusOf). Like every read of the projection, it must run on the
// goroutine that folds into it.
func (p *Projection) Source() report.Source {
	return report.Source{ControlTopic: p.Topic, View: p.View, ReadTo: p.Next, Now: time.Now(), AheadTolerance: p.AheadTolerance}
}
