package daemon_test

// jobReader is the tests' oracle: a reader of a Flink Agents control topic
// written from the rules issue 10 states (read from Flink Agents'
// KafkaActionStateCleanupCoordinator), independently of package
// projector/flinkagents, and used as the job uses its control topic when
// it recovers. Nothing here calls kcleanup's own reader.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// jobPlan is a plan as the job holds it.
type jobPlan struct {
	id, rp, topic, topicID string
	offsets                map[int32]int64
}

// jobView is what the job makes of its control topic.
type jobView struct {
	plans  map[string]jobPlan
	status map[string]string
	order  []string
	// err: the job cannot recover from the topic (its fold failed).
	err error
}

// boundary is the job's effective boundary: every plan for the same topic,
// topic ID and partition set, every two comparable, and the per-partition
// maximum over all of them (COMMITTED or APPLIED).
func (v jobView) boundary() (map[int32]int64, error) {
	if v.err != nil {
		return nil, v.err
	}
	if len(v.order) == 0 {
		return nil, fmt.Errorf("the control topic contains no committed boundary")
	}
	first := v.plans[v.order[0]]
	out := map[int32]int64{}
	for _, id := range v.order {
		p := v.plans[id]
		if p.topic != first.topic || p.topicID != first.topicID {
			return nil, fmt.Errorf("plan %s is for another topic", id)
		}
		if len(p.offsets) != len(first.offsets) {
			return nil, fmt.Errorf("plan %s has another partition set", id)
		}
		for part := range first.offsets {
			if _, ok := p.offsets[part]; !ok {
				return nil, fmt.Errorf("plan %s has another partition set", id)
			}
		}
		for _, other := range v.order {
			q := v.plans[other]
			ge, le := true, true
			for part, off := range p.offsets {
				ge = ge && off >= q.offsets[part]
				le = le && off <= q.offsets[part]
			}
			if !ge && !le {
				return nil, fmt.Errorf("incomparable boundaries %s and %s", id, other)
			}
		}
		for part, off := range p.offsets {
			out[part] = max(out[part], off)
		}
	}
	return out, nil
}

// readJobTopic reads topic partition 0 read_committed from the beginning
// up to the end offset captured first (waiting until the last stable
// offset reaches it), and folds every record.
func readJobTopic(t *testing.T, bootstrap, topic string) jobView {
	t.Helper()
	v, err := readJob(bootstrap, topic)
	if err != nil {
		t.Fatalf("oracle: %v", err)
	}
	return v
}

// readJob is readJobTopic for any goroutine: an error means the topic
// could not be read (not that the job's fold failed: jobView.err).
func readJob(bootstrap, topic string) (jobView, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		return jobView{}, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return jobView{}, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	end, _ := ends.Lookup(topic, 0)
	if end.Err != nil {
		return jobView{}, fmt.Errorf("end offset of %s: %w", topic, end.Err)
	}
	for {
		lso, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			return jobView{}, fmt.Errorf("last stable offset of %s: %w", topic, err)
		}
		if o, _ := lso.Lookup(topic, 0); o.Offset >= end.Offset {
			break
		}
		if ctx.Err() != nil {
			return jobView{}, fmt.Errorf("%s: a transaction stays open below the end offset %d", topic, end.Offset)
		}
		time.Sleep(50 * time.Millisecond)
	}
	r, err := kgo.NewClient(kgo.SeedBrokers(bootstrap),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return jobView{}, err
	}
	defer r.Close()
	v := jobView{plans: map[string]jobPlan{}, status: map[string]string{}}
	next := int64(0)
	for next < end.Offset {
		fs := r.PollFetches(ctx)
		if ctx.Err() != nil {
			return jobView{}, fmt.Errorf("%s read to %d of %d", topic, next, end.Offset)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			if rec.Offset < next || rec.Offset >= end.Offset {
				return
			}
			next = rec.Offset + 1
			if rec.Attrs.IsControl() || v.err != nil {
				return
			}
			v.err = v.fold(rec.Key, rec.Value)
			if v.err != nil {
				v.err = fmt.Errorf("offset %d: %w", rec.Offset, v.err)
			}
		})
	}
	return v, nil
}

func (v *jobView) fold(key, value []byte) error {
	if key == nil {
		return fmt.Errorf("no key")
	}
	if value == nil {
		return fmt.Errorf("tombstone for %s", key)
	}
	status, p, err := parseJobRecord(value)
	if err != nil {
		return err
	}
	if string(key) != p.id {
		return fmt.Errorf("key %s is not plan ID %s", key, p.id)
	}
	if prev, ok := v.plans[p.id]; ok {
		if fmt.Sprint(prev) != fmt.Sprint(p) {
			return fmt.Errorf("changed plan %s", p.id)
		}
		if v.status[p.id] == "APPLIED" && status == "COMMITTED" {
			return fmt.Errorf("regressed applied plan %s", p.id)
		}
	} else {
		v.order = append(v.order, p.id)
	}
	v.plans[p.id], v.status[p.id] = p, status
	return nil
}

// parseJobRecord: exactly {"schemaVersion":1,"status":…,"plan":{…}}, no
// duplicate or unknown field, nothing after it; the plan's six fields, and
// its ID the SHA-256 of its content.
func parseJobRecord(value []byte) (string, jobPlan, error) {
	top, err := exactObject(value, "schemaVersion", "status", "plan")
	if err != nil {
		return "", jobPlan{}, err
	}
	if string(top["schemaVersion"]) != "1" {
		return "", jobPlan{}, fmt.Errorf("schemaVersion %s", top["schemaVersion"])
	}
	var status string
	if err := json.Unmarshal(top["status"], &status); err != nil || status != "COMMITTED" && status != "APPLIED" {
		return "", jobPlan{}, fmt.Errorf("status %s", top["status"])
	}
	pf, err := exactObject(top["plan"], "schemaVersion", "planId", "sourceRecoveryPoint", "topic", "topicId", "offsets")
	if err != nil {
		return "", jobPlan{}, fmt.Errorf("plan: %w", err)
	}
	if string(pf["schemaVersion"]) != "1" {
		return "", jobPlan{}, fmt.Errorf("plan schemaVersion %s", pf["schemaVersion"])
	}
	var p jobPlan
	for name, dst := range map[string]*string{"planId": &p.id, "sourceRecoveryPoint": &p.rp, "topic": &p.topic, "topicId": &p.topicID} {
		if err := json.Unmarshal(pf[name], dst); err != nil {
			return "", jobPlan{}, fmt.Errorf("plan %s: %v", name, err)
		}
	}
	var offs map[string]json.Number
	dec := json.NewDecoder(bytes.NewReader(pf["offsets"]))
	dec.UseNumber()
	if err := dec.Decode(&offs); err != nil || len(offs) == 0 {
		return "", jobPlan{}, fmt.Errorf("plan offsets %s", pf["offsets"])
	}
	p.offsets = map[int32]int64{}
	for k, n := range offs {
		part, err1 := strconv.ParseInt(k, 10, 32)
		off, err2 := strconv.ParseInt(string(n), 10, 64)
		if err1 != nil || err2 != nil || off < 0 || part < 0 {
			return "", jobPlan{}, fmt.Errorf("plan offset %s=%s", k, n)
		}
		p.offsets[int32(part)] = off
	}
	parts := make([]int32, 0, len(p.offsets))
	for part := range p.offsets {
		parts = append(parts, part)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	text := "1\n" + p.rp + "\n" + p.topic + "\n" + p.topicID + "\n"
	for _, part := range parts {
		text += fmt.Sprintf("%d=%d\n", part, p.offsets[part])
	}
	sum := sha256.Sum256([]byte(text))
	if hex.EncodeToString(sum[:]) != p.id {
		return "", jobPlan{}, fmt.Errorf("plan ID %s does not match its content", p.id)
	}
	return status, p, nil
}

// exactObject reads one JSON object with exactly the named fields, each
// once, and nothing after it.
func exactObject(data []byte, names ...string) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not an object")
	}
	out := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name := tok.(string)
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("duplicate field %s", name)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		out[name] = raw
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing content")
	}
	var rest json.RawMessage
	if err := dec.Decode(&rest); err == nil {
		return nil, fmt.Errorf("trailing content")
	}
	if len(out) != len(names) {
		return nil, fmt.Errorf("fields %v, want exactly %v", keysOf(out), names)
	}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			return nil, fmt.Errorf("missing field %s", n)
		}
	}
	return out, nil
}

func keysOf(m map[string]json.RawMessage) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
