package checkpoint

// skipJavaObject walks one object of Java's Object Serialization Stream
// Protocol (what ObjectOutputStream.writeObject writes after the stream
// header): Flink's metadata versions 4 and later end with the
// CheckpointProperties so written. Nothing of it is kept; walking it makes a
// truncated or corrupted trailer an error, as it is for Flink.
//
// It reads the grammar's object forms: null, reference, string, enum, array,
// class descriptor and object with its class data (serializable fields in
// descriptor order, and block data with a writeObject method).
type javaWalker struct {
	d      *decoder
	depth  int
	handle []*javaClass // one per new handle; nil for handles that are not class descriptors
}

type javaClass struct {
	name   string
	flags  byte
	fields []javaField
	super  *javaClass
}

type javaField struct {
	code byte // B C D F I J S Z, or L / [ for objects
}

const (
	tcNull           = 0x70
	tcReference      = 0x71
	tcClassDesc      = 0x72
	tcObject         = 0x73
	tcString         = 0x74
	tcArray          = 0x75
	tcClass          = 0x76
	tcBlockData      = 0x77
	tcEndBlockData   = 0x78
	tcReset          = 0x79
	tcBlockDataLong  = 0x7a
	tcLongString     = 0x7c
	tcProxyClassDesc = 0x7d
	tcEnum           = 0x7e
	javaBaseHandle   = 0x7e0000

	scWriteMethod    = 0x01
	scSerializable   = 0x02
	scExternalizable = 0x04
	scBlockData      = 0x08
)

// maxJavaDepth bounds nesting: CheckpointProperties nests three levels.
const maxJavaDepth = 32

func (w *javaWalker) newHandle(c *javaClass) { w.handle = append(w.handle, c) }

// object walks one object; it returns the class descriptor when the object is one.
func (w *javaWalker) object(what string) *javaClass {
	d := w.d
	if d.err != nil {
		return nil
	}
	if w.depth > maxJavaDepth {
		d.fail("%s nested at most %d deep", what, maxJavaDepth)
		return nil
	}
	w.depth++
	defer func() { w.depth-- }()
	at := d.pos()
	switch tc := d.u8(what); tc {
	case tcNull:
	case tcReference:
		h := d.i32(what + " (a back-reference)")
		i := int64(h) - javaBaseHandle
		if d.err == nil && (i < 0 || i >= int64(len(w.handle))) {
			d.failAt(at, "%s: a back-reference to one of %d earlier handles, found 0x%x", what, len(w.handle), h)
			return nil
		}
		if d.err == nil {
			return w.handle[i]
		}
	case tcString:
		w.newHandle(nil)
		d.utf(what + " (a string)")
	case tcLongString:
		w.newHandle(nil)
		n := d.i64(what + " (a long string's length)")
		if d.err == nil && (n < 0 || n > int64(d.remaining())) {
			d.failAt(at, "%s: a long string that fits the %d bytes left", what, d.remaining())
			return nil
		}
		d.take(int(n), what+" (a long string)")
	case tcClassDesc:
		c := &javaClass{name: d.utf("a class name")}
		d.i64("a serialVersionUID")
		w.newHandle(c)
		c.flags = d.u8("the class descriptor's flags")
		n := int(d.u16("the number of serialized fields"))
		if d.err == nil && n*3 > d.remaining() {
			d.fail("%d serialized fields that fit the %d bytes left", n, d.remaining())
		}
		for i := 0; i < n && d.err == nil; i++ {
			fat := d.pos()
			f := javaField{code: d.u8("a field's type code")}
			d.utf("a field's name")
			switch f.code {
			case 'B', 'C', 'D', 'F', 'I', 'J', 'S', 'Z':
			case 'L', '[':
				w.object("a field's class name")
			default:
				d.failAt(fat, "a field type code (B C D F I J S Z L [), found 0x%02x", f.code)
			}
			c.fields = append(c.fields, f)
		}
		w.annotation("the class annotation")
		c.super = w.object("the superclass descriptor")
		return c
	case tcProxyClassDesc:
		c := &javaClass{}
		w.newHandle(c)
		n := d.count("proxy interfaces", 2)
		for i := 0; i < n && d.err == nil; i++ {
			d.utf("a proxy interface name")
		}
		w.annotation("the proxy class annotation")
		c.super = w.object("the proxy's superclass descriptor")
		return c
	case tcClass:
		c := w.object("a class's descriptor")
		w.newHandle(c)
	case tcEnum:
		w.object("an enum's class descriptor")
		w.newHandle(nil)
		w.object("an enum constant's name")
	case tcArray:
		c := w.object("an array's class descriptor")
		w.newHandle(nil)
		size := 0
		if c != nil && len(c.name) == 2 && c.name[0] == '[' {
			size = primitiveSize(c.name[1])
		}
		n := d.count("array elements", max(size, 1))
		if size > 0 {
			d.take(n*size, "an array's elements")
			break
		}
		for i := 0; i < n && d.err == nil; i++ {
			w.object("an array element")
		}
	case tcObject:
		c := w.object("an object's class descriptor")
		w.newHandle(nil)
		if d.err == nil && c == nil {
			d.failAt(at, "%s: an object with a class descriptor", what)
			return nil
		}
		w.classData(c)
	case tcReset:
		w.handle = w.handle[:0]
	default:
		if d.err == nil {
			d.failAt(at, "%s in Java serialization (a type code 0x70 to 0x7e), found 0x%02x", what, tc)
		}
	}
	return nil
}

func primitiveSize(code byte) int {
	switch code {
	case 'B', 'Z':
		return 1
	case 'C', 'S':
		return 2
	case 'I', 'F':
		return 4
	case 'J', 'D':
		return 8
	}
	return 0
}

// annotation walks contents up to TC_ENDBLOCKDATA: block data and objects.
func (w *javaWalker) annotation(what string) {
	d := w.d
	for d.err == nil {
		if d.remaining() == 0 {
			d.fail("%s, ended by TC_ENDBLOCKDATA (0x78)", what)
			return
		}
		switch d.b[d.off] {
		case tcEndBlockData:
			d.off++
			return
		case tcBlockData:
			d.off++
			n := d.u8("a block's length")
			d.take(int(n), "a block's data")
		case tcBlockDataLong:
			d.off++
			n := d.i32("a long block's length")
			d.take(int(n), "a long block's data")
		default:
			w.object(what)
		}
	}
}

// classData walks an object's field values, superclass first.
func (w *javaWalker) classData(c *javaClass) {
	var chain []*javaClass
	for ; c != nil && len(chain) <= maxJavaDepth; c = c.super {
		chain = append(chain, c)
	}
	d := w.d
	for i := len(chain) - 1; i >= 0 && d.err == nil; i-- {
		c := chain[i]
		switch {
		case c.flags&scExternalizable != 0:
			if c.flags&scBlockData == 0 {
				d.fail("externalizable data in block mode (protocol version 2)")
				return
			}
			w.annotation("an externalizable object's data")
		case c.flags&scSerializable != 0:
			for _, f := range c.fields {
				if n := primitiveSize(f.code); n > 0 {
					d.take(n, "a field's value")
				} else {
					w.object("a field's value")
				}
			}
			if c.flags&scWriteMethod != 0 {
				w.annotation("an object's writeObject data")
			}
		}
	}
}
