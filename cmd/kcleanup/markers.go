package main

import (
	"fmt"
	"io"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
)

// unsourcedMarkersWarning is printed when markers do not say which checkpoint, operator and
// subtask they are from: nothing can tell whether a subtask's markers are missing.
const unsourcedMarkersWarning = "Warning: " + events.SubtasksUnchecked + "\n"

// readMarkerFiles parses every markers file, in order ("-" is standard input, at most once).
// origins[i] names where markers[i] came from ("file" or "file[2]"), for messages. An error
// names the file. Markers that say where they were read must be every subtask's of one
// checkpoint (events.CheckSubtasks); markers that do not get a warning on warn.
func readMarkerFiles(files []string, stdin io.Reader, warn io.Writer) (markers []events.Marker, origins []string, _ error) {
	if err := stdinOnce("markers", files); err != nil {
		return nil, nil, err
	}
	for _, f := range files {
		data, err := readInput(f, stdin)
		if err != nil {
			return nil, nil, errors.Wrap(err, "read markers file")
		}
		ms, err := events.ParseMarkers(data)
		if err != nil {
			return nil, nil, errors.WithHint(decodeError(err, "markers file", f, data),
				`a markers file holds one marker {"schemaVersion":1,"topic":…,"topicId":…,"offsets":{"0":100}} or a JSON array of them`)
		}
		for i, m := range ms {
			markers = append(markers, m)
			if len(ms) == 1 {
				origins = append(origins, f)
			} else {
				origins = append(origins, fmt.Sprintf("%s[%d]", f, i))
			}
		}
	}
	for i, m := range markers {
		if m.Topic != markers[0].Topic {
			return nil, nil, errors.WithHint(errors.Newf(
				"markers name more than one topic: the topic is %q in %s and %q in %s",
				markers[0].Topic, origins[0], m.Topic, origins[i]),
				"validate the markers of each action-state topic separately")
		}
	}
	checked, err := events.CheckSubtasks(markers)
	if err != nil {
		if len(origins) > 1 {
			err = errors.WithHint(err, "markers are numbered from 0 in the order read: "+describeOrigin(origins))
		}
		return nil, nil, errors.WithHint(err, "give the markers of every subtask of one checkpoint, as kcleanup markers --checkpoint writes them")
	}
	if !checked {
		fmt.Fprint(warn, unsourcedMarkersWarning)
	}
	return markers, origins, nil
}
