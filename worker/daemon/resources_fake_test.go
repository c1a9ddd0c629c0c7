package daemon

import (
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcleanup/kcleanup/internal/kafkatest"
)

// A control topic the group assigns while its settings cannot be read (here the broker answers
// DescribeConfigs with an error; at 256 descriptors the dial failed, internal/clustertest/limits)
// is not dropped: /readyz lists it under unowned, with why, and the replica asks again until it
// owns it once the settings are read. Before, it was "not owning it" until the next rebalance
// and nobody finished its operations.
func TestAssignedControlTopicWithUnreadSettingsIsOwnedOnceRead(t *testing.T) {
	c, fk := fakeGroupBroker(t)
	_, ctl := setup(t, c, "action-state")
	var failing atomic.Bool
	failing.Store(true)
	fk.ControlKey(kmsg.DescribeConfigs.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		fk.KeepControl()
		if !failing.Load() {
			return nil, nil, false
		}
		r := req.(*kmsg.DescribeConfigsRequest)
		resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
		for _, res := range r.Resources {
			rr := kmsg.NewDescribeConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, kerr.UnknownServerError.Code
			resp.Resources = append(resp.Resources, rr)
		}
		return resp, nil, true
	})
	opts := append(fastOptions(t), WithControlTopicRegex("^"+regexp.QuoteMeta(ctl)+"$"), WithDiscoveryInterval(time.Hour))
	r := startDaemon(t, c, opts...)
	kafkatest.Eventually(t, 30*time.Second, "the assigned control topic listed as unowned, with why", func() bool {
		return r.d.unownedTopics()[ctl] != ""
	})
	t.Logf("/readyz unowned: %s", r.d.unownedTopics()[ctl])
	if r.d.owned(ctl) != nil {
		t.Fatal("owned a control topic whose settings it could not read")
	}
	failing.Store(false)
	kafkatest.Eventually(t, 30*time.Second, "the control topic owned once its settings are read", func() bool {
		return r.d.owned(ctl) != nil && len(r.d.unownedTopics()) == 0
	})
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}
