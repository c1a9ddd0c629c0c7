package checkpoint

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
)

// kryoLines are the directories of elements written by Flink's own
// KryoSerializer (testdata/kryo/README.md) and the line that wrote them.
var kryoLines = map[string]Line{"flink-1.20.3": Flink1, "flink-2.2.0": Flink2}

// kryoExpected is what each file of testdata/kryo holds.
var kryoExpected = map[string]Element{
	"marker-ascii.bin": {Marker: &RecoveryMarker{SchemaVersion: 1, Topic: "actions", TopicID: "AAAAAAAAAAAAAAAAAAAAAA", Offsets: events.Offsets{0: 100, 1: 120}}},
	"marker-emoji.bin": {Marker: &RecoveryMarker{SchemaVersion: 1, Topic: "actions-🦀-été-中", TopicID: "x7Jq0L9cRZ2Y5wqv3lNnAg",
		Offsets: events.Offsets{0: -1, 7: math.MaxInt64, math.MaxInt32: 0, 300: 1 << 40}}},
	"marker-sameref.bin": {Marker: &RecoveryMarker{SchemaVersion: 1, Topic: "same-instance", TopicID: "same-instance", Offsets: events.Offsets{}}},
	"marker-long.bin":    {Marker: &RecoveryMarker{SchemaVersion: 7, Topic: strings.Repeat("t", 100), TopicID: "a", Offsets: events.Offsets{0: 100, 1: 120}}},
	"legacy.bin":         {Legacy: events.Offsets{0: 100, 3: 5}},
}

func readKryo(t testing.TB, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "kryo", dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDecodeElementFlinkWritten decodes elements that Flink 1.20 (Kryo 2)
// and Flink 2.2 (Kryo 5) wrote, exactly, to their last byte.
func TestDecodeElementFlinkWritten(t *testing.T) {
	for dir, line := range kryoLines {
		for name, want := range kryoExpected {
			t.Run(dir+"/"+name, func(t *testing.T) {
				b := readKryo(t, dir, name)
				got, n, err := DecodeElement(b, line)
				if err != nil {
					t.Fatalf("DecodeElement: %v", err)
				}
				if n != len(b) {
					t.Errorf("took %d of %d bytes", n, len(b))
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("got %+v %+v, want %+v %+v", got.Marker, got.Legacy, want.Marker, want.Legacy)
				}
			})
		}
	}
}

// TestDecodeElementWrongLine: an element read with the other Kryo never
// comes out as a plausible marker that takes the element's exact bytes (the
// seed's tool reads a Flink 1.20 savepoint as "schema -1").
func TestDecodeElementWrongLine(t *testing.T) {
	for dir, line := range kryoLines {
		other := Flink1
		if line == Flink1 {
			other = Flink2
		}
		for name := range kryoExpected {
			b := readKryo(t, dir, name)
			e, n, err := DecodeElement(b, other)
			if err == nil && n == len(b) {
				t.Errorf("%s/%s read as %s: no error, got %+v %+v", dir, name, other, e.Marker, e.Legacy)
			}
		}
	}
}

// TestDecodeElementTruncated: every prefix of a real element is an error
// naming an offset inside it, never a panic.
func TestDecodeElementTruncated(t *testing.T) {
	for dir, line := range kryoLines {
		for name := range kryoExpected {
			b := readKryo(t, dir, name)
			for i := 0; i < len(b); i++ {
				_, _, err := DecodeElement(b[:i], line)
				var fe *FormatError
				if !errors.As(err, &fe) {
					t.Fatalf("%s/%s cut at %d: %v, want a FormatError", dir, name, i, err)
				}
				if fe.Offset < 0 || fe.Offset > int64(i) {
					t.Errorf("%s/%s cut at %d: offset %d outside the input", dir, name, i, fe.Offset)
				}
			}
		}
	}
}

func TestOperatorIDMatchesFlink(t *testing.T) {
	// Computed by Flink's shaded Guava murmur3_128(0) and AbstractID.toHexString
	// (Flink 2.2.0), as StreamGraphHasherV2 and OperatorID do for a uid.
	for uid, want := range map[string]string{
		"action-state-markers": "ada96e354475f5c9e615602fd4ef59c9",
		"actions-🦀":            "8f12ea9efac4bba47648280e8383f5a2",
		"a-much-longer-operator-uid-that-spans-several-blocks-of-sixteen": "1ff299e452145cf6bcac6a207095eed4",
		"é": "e863d411a47a18c93f7ecadf6bc7657e",
	} {
		if got := OperatorID(uid); got != want {
			t.Errorf("OperatorID(%q) = %s, want %s", uid, got, want)
		}
	}
}
