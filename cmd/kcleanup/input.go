package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"

	"github.com/cockroachdb/errors"
)

// stdinName is how a command line names standard input where it takes a file.
const stdinName = "-"

// readInput reads a file named on the command line; "-" is standard input.
func readInput(name string, stdin io.Reader) ([]byte, error) {
	if name == stdinName {
		data, err := io.ReadAll(stdin)
		return data, errors.Wrap(err, "read standard input")
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, errors.WithHint(errors.Wrapf(err, "read %s", name), "check the file name and its permissions")
	}
	return data, nil
}

// stdinOnce refuses a command line that names standard input more than once for flag: the
// first read would take all of it and the second would see an empty document.
func stdinOnce(flag string, names []string) error {
	n := 0
	for _, name := range names {
		if name == stdinName {
			n++
		}
	}
	if n <= 1 {
		return nil
	}
	return usageError(errors.WithHintf(
		errors.Newf("--%s %s is given %d times: standard input can be read only once", flag, stdinName, n),
		"give --%s %s once and name the other files, or put all the markers in one JSON array", flag, stdinName))
}

// decodeError is err, a decoder's verdict on the file name (what it holds: "plan file",
// "markers file"), with what went wrong with the file itself first: a file that is empty or
// that ends inside a JSON document says so, whatever the decoder's own words.
func decodeError(err error, what, name string, data []byte) error {
	if name == stdinName {
		name = "(standard input)"
	}
	switch n, why := fileProblem(data); why {
	case problemEmpty:
		err = errors.WithHint(errors.Wrap(err, "the file is empty"), "give the file that was written, not an empty one")
	case problemTruncated:
		// Whatever field the decoder was in when the input ran out, the file is the problem:
		// say that alone (the decoder's error stays attached, and its hints are kept).
		short := errors.WithSecondaryError(errors.Newf("the file ends early (truncated?) at byte %d", n), err)
		short = errors.WithHint(short, "the file was cut short: copy it again in full, or make it again")
		for _, h := range errors.GetAllHints(err) {
			short = errors.WithHint(short, h)
		}
		err = short
	}
	return errors.Wrapf(err, "%s %s", what, name)
}

type fileProblemKind int

const (
	problemNone fileProblemKind = iota
	problemEmpty
	problemTruncated
)

// fileProblem tells an empty input and one that stops inside a JSON value (an open object,
// array or string, or a member without its value) from every other error. It returns the
// length of a truncated input: the byte where it ends.
func fileProblem(data []byte) (int, fileProblemKind) {
	body := bytes.TrimPrefix(data, []byte("\uFEFF"))
	if len(bytes.TrimSpace(body)) == 0 {
		return 0, problemEmpty
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	depth := 0
	for {
		tok, err := dec.Token()
		switch {
		case errors.Is(err, io.ErrUnexpectedEOF):
			return len(data), problemTruncated
		case err == io.EOF:
			if depth > 0 {
				return len(data), problemTruncated
			}
			return 0, problemNone
		case err != nil:
			return 0, problemNone // a syntax error: the decoder's words are the right ones
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
		if depth == 0 {
			return 0, problemNone // one whole value; what follows is the decoder's business
		}
	}
}
