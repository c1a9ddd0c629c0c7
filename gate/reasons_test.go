package gate

import "testing"

func TestEveryReasonHasAClass(t *testing.T) {
	seen := map[Reason]bool{}
	for _, r := range Reasons() {
		if seen[r] {
			t.Fatalf("reason %q listed twice", r)
		}
		seen[r] = true
		if c := r.Class(); c != Refused && c != CannotTell && c != Invalid {
			t.Fatalf("reason %q has class %q", r, c)
		}
	}
	if Reason("from-a-newer-build").Class() != CannotTell {
		t.Fatal("an unknown reason must fail closed")
	}
	for c, want := range map[Class][2]int{Allowed: {0, 200}, "": {4, 503}, Refused: {3, 409}, CannotTell: {4, 503}, Invalid: {2, 400}} {
		if c.ExitCode() != want[0] || c.HTTPStatus() != want[1] {
			t.Fatalf("class %q: exit %d http %d", c, c.ExitCode(), c.HTTPStatus())
		}
	}
}
