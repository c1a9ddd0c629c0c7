package page

import (
	"bytes"
	_ "embed"
	"html/template"
	"io"

	"github.com/cockroachdb/errors"
)

// The page's assets, embedded: the console and the report load nothing
// from anywhere else.
var (
	//go:embed assets/page.html
	pageHTML string
	//go:embed assets/console.css
	consoleCSS string
	//go:embed assets/console.js
	consoleJS string
)

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"css": func() template.CSS { return template.CSS(consoleCSS) },
	"js":  func() template.JS { return template.JS(consoleJS) },
}).Parse(pageHTML))

// Render writes v as one self-contained HTML document.
func Render(w io.Writer, v View) error {
	return errors.Wrap(pages.ExecuteTemplate(w, "page", v), "render page")
}

// RenderMain writes only the content of the page, which the live console
// swaps in without a reload.
func RenderMain(w io.Writer, v View) error {
	return errors.Wrap(pages.ExecuteTemplate(w, "main", v), "render page content")
}

// HTML is the page (main false) or its content (main true) as bytes: what
// the console's handler serves and hashes for its ETag.
func HTML(v View, main bool) ([]byte, error) {
	var b bytes.Buffer
	var err error
	if main {
		err = RenderMain(&b, v)
	} else {
		err = Render(&b, v)
	}
	return b.Bytes(), err
}
