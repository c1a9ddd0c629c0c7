package fsm

import (
	"fmt"
	"strings"
)

// Mermaid returns the lifecycle as a Mermaid stateDiagram-v2, generated from
// the table in table order, so the same table always gives the same text.
// None is drawn as the start [*]; terminal states lead to the end [*].
//
// It does not use looplab's VisualizeWithType: that draws None (the empty
// state) as a nameless node, which is not valid Mermaid.
func Mermaid() string {
	var b strings.Builder
	b.WriteString("stateDiagram-v2\n")
	node := func(s State) string {
		if s == None {
			return "[*]"
		}
		return string(s)
	}
	for _, t := range table {
		label := string(t.Event)
		if t.From == t.To {
			label += " (retry)"
		}
		fmt.Fprintf(&b, "    %s --> %s: %s\n", node(t.From), node(t.To), label)
	}
	for _, s := range States() {
		if s.Terminal() {
			fmt.Fprintf(&b, "    %s --> [*]\n", s)
		}
	}
	return b.String()
}

// Markdown returns the content of docs/state-diagram.md (`make docs`).
func Markdown() string {
	return "# Operation lifecycle\n\n" +
		"Generated from the transition table in `fsm/fsm.go` by `make docs`; do not edit.\n" +
		"Each arrow is an event the lifecycle allows in that state (one control-topic record\n" +
		"`<planId>/<EVENT>`); the projector also checks each record's content (docs/design.md §5).\n\n" +
		"```mermaid\n" + Mermaid() + "```\n"
}
