package events

import "testing"

func TestOffsetsString(t *testing.T) {
	for _, c := range []struct {
		o    Offsets
		want string
	}{
		{nil, "none"},
		{Offsets{}, "none"},
		{Offsets{0: 40}, "0=40"},
		{Offsets{1: 30, 0: 40}, "0=40 1=30"},
		{Offsets{10: 1, 2: 0, 9: 9223372036854775807}, "2=0 9=9223372036854775807 10=1"},
	} {
		if got := c.o.String(); got != c.want {
			t.Errorf("%v.String() = %q, want %q", map[int32]int64(c.o), got, c.want)
		}
	}
}
