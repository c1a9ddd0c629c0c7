package daemon

import "github.com/kcleanup/kcleanup/worker"

// unauthorized says, per control topic this replica serves, why a missing ACL blocks it: its
// projection cannot read the control topic, or (on the owner) an operation is blocked. Topics
// without such a block are absent.
func (d *Daemon) unauthorized() map[string]string {
	out := map[string]string{}
	group := d.groupDenied.Load()
	for _, t := range d.servedTopics() {
		if group != nil && d.owned(t) == nil {
			out[t] = *group
			continue
		}
		if s := d.view(t).snap.Load(); s != nil && s.err != nil && worker.IsAuthorizationError(s.err) {
			out[t] = s.err.Error()
			continue
		}
		if o := d.owned(t); o != nil {
			if why, ok := o.denied(); ok {
				out[t] = why
			}
		}
	}
	return out
}
