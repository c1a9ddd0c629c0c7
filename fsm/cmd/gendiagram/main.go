// Command gendiagram prints docs/state-diagram.md, the operation lifecycle
// drawn from the fsm transition table. Run it through `make docs`.
package main

import (
	"fmt"

	"github.com/kcleanup/kcleanup/fsm"
)

func main() {
	fmt.Print(fsm.Markdown())
}
