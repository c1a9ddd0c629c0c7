package clientconfig

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/cockroachdb/errors"
)

// maxSize bounds what we read: a client properties file is a few kilobytes even with inline
// certificates. A larger input is a mistake (the wrong file), not a config.
const maxSize = 1 << 20

// Protocols and mechanisms, spelled as Kafka spells them.
const (
	ProtoPlaintext     = "PLAINTEXT"
	ProtoSSL           = "SSL"
	ProtoSASLPlaintext = "SASL_PLAINTEXT"
	ProtoSASLSSL       = "SASL_SSL"

	MechPlain       = "PLAIN"
	MechSCRAMSHA256 = "SCRAM-SHA-256"
	MechSCRAMSHA512 = "SCRAM-SHA-512"

	plainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	scramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// Store types, as ssl.truststore.type and ssl.keystore.type spell them (case-insensitive).
const (
	storePEM    = "PEM"
	storeJKS    = "JKS"
	storePKCS12 = "PKCS12"
)

// The keys kcleanup maps onto its client. Every other key of Kafka's client configuration is
// accepted and ignored with a note (keys.go); a key that is not Kafka's is an error.
const (
	keyClientID           = "client.id"
	keySecurityProtocol   = "security.protocol"
	keySASLMechanism      = "sasl.mechanism"
	keySASLJAASConfig     = "sasl.jaas.config"
	keyTruststoreType     = "ssl.truststore.type"
	keyTruststoreLocation = "ssl.truststore.location"
	keyTruststorePassword = "ssl.truststore.password"
	keyTruststoreCerts    = "ssl.truststore.certificates"
	keyKeystoreType       = "ssl.keystore.type"
	keyKeystoreLocation   = "ssl.keystore.location"
	keyKeystorePassword   = "ssl.keystore.password"
	keyKeystoreChain      = "ssl.keystore.certificate.chain"
	keyKeystoreKey        = "ssl.keystore.key"
	keyKeyPassword        = "ssl.key.password"
	keyEndpointIdent      = "ssl.endpoint.identification.algorithm"
	keyEnabledProtocols   = "ssl.enabled.protocols"
)

// Why an accepted key is ignored: the notes printed for it.
const (
	noteBootstrap = "the brokers come from -b/--bootstrap-server (or KCLEANUP_BOOTSTRAP_SERVER)"
	noteWrites    = "kcleanup always writes with acks=all and the idempotent producer, and never transactionally"
	noteGroup     = "kcleanup's only consumer group is the worker's own (kcleanup-worker.<control topic>), with its own settings"
	noteTimeout   = "kcleanup bounds every request with --timeout"
	noteSASL      = "it belongs to a SASL mechanism kcleanup does not support (GSSAPI, OAUTHBEARER) or to Java's login machinery"
	noteJavaTLS   = "it configures Java's TLS implementation; kcleanup uses Go's crypto/tls (TLS 1.2 or newer, Go's cipher suites)"
	notePlugin    = "it names a Java class kcleanup cannot load"
	noteTuning    = "kcleanup's client (franz-go) tunes this itself"
)

// Config is what a --command-config file says about how to reach the cluster. It holds
// secrets: its String method redacts them, and no error message quotes them.
type Config struct {
	name  string         // the file it came from, for messages
	lines map[string]int // key → line it was set on, for messages
	notes []string       // one line per accepted key that kcleanup ignores

	protocol   string // PLAINTEXT (Kafka's default), SSL, SASL_PLAINTEXT or SASL_SSL
	mechanism  string // PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; "" without SASL
	username   string
	password   string
	scramToken bool // ScramLoginModule tokenauth=true: the credentials are a delegation token

	clientID    string
	hasClientID bool

	truststoreType     string // PEM, JKS or PKCS12 (Kafka's default: JKS)
	truststoreLocation string // a file in that format
	truststorePassword string
	truststorePEM      string // or the PEM certificates inline
	keystoreType       string
	keystoreLocation   string // a file holding the client certificate chain and its key
	keystorePassword   string
	keyPassword        string // ssl.key.password: the key entry's password, if not the store's
	hasKeyPassword     bool
	keystoreChainPEM   string // or the chain inline...
	keystoreKeyPEM     string // ...and the key inline
	verifyHostname     bool   // ssl.endpoint.identification.algorithm=https, Kafka's default
	minTLS, maxTLS     uint16 // from ssl.enabled.protocols; 0 for Go's defaults (TLS 1.2 minimum)
}

// UsesTLS says whether the connection is encrypted (SSL or SASL_SSL).
func (c Config) UsesTLS() bool {
	return c.protocol == ProtoSSL || c.protocol == ProtoSASLSSL
}

// UsesSASL says whether the client authenticates with SASL.
func (c Config) UsesSASL() bool {
	return c.protocol == ProtoSASLPlaintext || c.protocol == ProtoSASLSSL
}

// Protocol is security.protocol, upper case.
func (c Config) Protocol() string { return c.protocol }

// Mechanism is sasl.mechanism, upper case, or "" without SASL.
func (c Config) Mechanism() string { return c.mechanism }

// Principal is the Kafka principal this client authenticates as, when the file says it:
// "User:<username>" for SASL PLAIN and SCRAM (Kafka's default principal builder), "" otherwise
// (PLAINTEXT, or TLS where the principal is the certificate's subject).
func (c Config) Principal() string {
	if c.UsesSASL() && !c.scramToken && c.username != "" {
		return "User:" + c.username
	}
	return ""
}

// Notes are one line each for the keys kcleanup accepts but does not use, in file order, each
// naming the file and line: "client.properties:3: request.timeout.ms is ignored: ...". Commands
// print them to stderr.
func (c Config) Notes() []string { return append([]string(nil), c.notes...) }

// String describes the settings without the secrets, so that a stray %v cannot leak them.
func (c Config) String() string {
	return fmt.Sprintf("clientconfig.Config{protocol=%s mechanism=%s user=%q password=<redacted> truststore=%s:%q keystore=%s:%q verifyHostname=%t}",
		c.protocol, c.mechanism, c.username, c.truststoreType, c.truststoreLocation, c.keystoreType, c.keystoreLocation, c.verifyHostname)
}

// GoString is String, for %#v.
func (c Config) GoString() string { return c.String() }

// Load reads and parses the --command-config file at path.
func Load(path string) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, errors.Wrap(err, "--command-config")
	}
	defer f.Close()
	return Parse(f, path)
}

// Parse parses a Kafka client properties file (the --command-config of Kafka's own tools); name
// is the file's name, for messages. It reads no other file: the stores it names are opened by
// Opts. Every error names the file, the line and the key.
func Parse(r io.Reader, name string) (Config, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxSize+1))
	if err != nil {
		return Config{}, errors.Wrapf(err, "read %s", name)
	}
	if len(data) > maxSize {
		return Config{}, errors.Newf("%s: larger than %d bytes; is it the right file?", name, maxSize)
	}
	props, err := parseProperties(name, string(data))
	if err != nil {
		return Config{}, err
	}
	c := Config{
		name:           name,
		lines:          map[string]int{},
		protocol:       ProtoPlaintext,
		verifyHostname: true,
	}
	var jaas *jaasLogin
	for _, p := range props {
		if first, dup := c.lines[p.key]; dup {
			return Config{}, c.errorf(p.line, "%s is set twice (first on line %d); keep one", p.key, first)
		}
		c.lines[p.key] = p.line
		// Kafka trims every setting's value (ConfigDef.parseType) with Java's String.trim.
		v := strings.TrimFunc(p.value, func(r rune) bool { return r <= ' ' })
		if err := c.set(p, v, &jaas); err != nil {
			return Config{}, err
		}
	}
	if err := c.checkSASL(jaas); err != nil {
		return Config{}, err
	}
	if err := c.checkTLS(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// set applies one key. Checks that involve several keys wait for checkSASL and checkTLS.
func (c *Config) set(p property, v string, jaas **jaasLogin) error {
	switch p.key {
	case keyClientID:
		c.clientID, c.hasClientID = v, true
	case keySecurityProtocol:
		switch u := strings.ToUpper(v); u {
		case ProtoPlaintext, ProtoSSL, ProtoSASLPlaintext, ProtoSASLSSL:
			c.protocol = u
		default:
			return c.errorf(p.line, "%s %q is not a Kafka security protocol: use %s, %s, %s or %s",
				p.key, v, ProtoPlaintext, ProtoSSL, ProtoSASLPlaintext, ProtoSASLSSL)
		}
	case keySASLMechanism:
		switch u := strings.ToUpper(v); u {
		case MechPlain, MechSCRAMSHA256, MechSCRAMSHA512:
			c.mechanism = u
		default:
			return c.errorf(p.line, "%s %q is not supported: use %s, %s or %s (GSSAPI/Kerberos and OAUTHBEARER are not supported)",
				p.key, v, MechPlain, MechSCRAMSHA256, MechSCRAMSHA512)
		}
	case keySASLJAASConfig:
		l, err := parseJAAS(v)
		if err != nil {
			return errors.Wrapf(err, "%s:%d: %s", c.name, p.line, p.key)
		}
		*jaas = &l
	case keyTruststoreType, keyKeystoreType:
		t, err := c.storeType(p, v)
		if err != nil {
			return err
		}
		if p.key == keyTruststoreType {
			c.truststoreType = t
		} else {
			c.keystoreType = t
		}
	case keyEndpointIdent:
		switch {
		case v == "":
			c.verifyHostname = false
		case strings.EqualFold(v, "https"):
			c.verifyHostname = true
		default:
			return c.errorf(p.line, "%s %q is not supported: use https (verify the broker's host name, the default) or an empty value (do not)", p.key, v)
		}
	case keyEnabledProtocols:
		return c.setProtocols(p, v)
	case keyTruststorePassword, keyKeystorePassword, keyKeyPassword:
		*map[string]*string{
			keyTruststorePassword: &c.truststorePassword,
			keyKeystorePassword:   &c.keystorePassword,
			keyKeyPassword:        &c.keyPassword,
		}[p.key] = v
		c.hasKeyPassword = c.hasKeyPassword || p.key == keyKeyPassword
	case keyTruststoreLocation, keyTruststoreCerts, keyKeystoreLocation, keyKeystoreChain, keyKeystoreKey:
		if v == "" {
			return c.errorf(p.line, "%s is empty", p.key)
		}
		*map[string]*string{
			keyTruststoreLocation: &c.truststoreLocation,
			keyTruststoreCerts:    &c.truststorePEM,
			keyKeystoreLocation:   &c.keystoreLocation,
			keyKeystoreChain:      &c.keystoreChainPEM,
			keyKeystoreKey:        &c.keystoreKeyPEM,
		}[p.key] = v
	default:
		note, known := kafkaClientKeys[p.key]
		if !known {
			return c.unknownKey(p)
		}
		c.notes = append(c.notes, fmt.Sprintf("%s:%d: %s is ignored: %s", c.name, p.line, p.key, note))
	}
	return nil
}

// unknownKey is the error for a key that is not Kafka's: most likely a typo.
func (c *Config) unknownKey(p property) error {
	err := c.errorf(p.line, "unknown key %q: not a setting of Kafka's clients", p.key)
	if near := nearestKey(p.key); near != "" {
		return errors.WithHintf(err, "did you mean %s? (a Kafka client properties file, as kafka-topics --command-config takes it)", near)
	}
	return errors.WithHint(err, "remove it: a --command-config file holds Kafka client settings only (security.protocol, sasl.*, ssl.*, client.id, ...)")
}

// setProtocols maps ssl.enabled.protocols (e.g. "TLSv1.2,TLSv1.3") to a range of TLS versions.
// Versions older than 1.2 are refused: Kafka disables them by default, and so does Go.
func (c *Config) setProtocols(p property, v string) error {
	versions := map[string]uint16{"TLSV1.2": 0x0303, "TLSV1.3": 0x0304}
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		ver, ok := versions[strings.ToUpper(f)]
		if !ok {
			return c.errorf(p.line, "%s: %q is not supported: use TLSv1.2 and/or TLSv1.3", p.key, f)
		}
		if c.minTLS == 0 || ver < c.minTLS {
			c.minTLS = ver
		}
		if ver > c.maxTLS {
			c.maxTLS = ver
		}
	}
	if c.minTLS == 0 {
		return c.errorf(p.line, "%s is empty: list TLSv1.2 and/or TLSv1.3", p.key)
	}
	return nil
}

func (c *Config) storeType(p property, v string) (string, error) {
	switch u := strings.ToUpper(v); u {
	case storePEM, storeJKS, storePKCS12:
		return u, nil
	default:
		return "", c.errorf(p.line, "%s %q is not supported: use PEM, JKS or PKCS12", p.key, v)
	}
}

// checkSASL checks that protocol, mechanism and JAAS login module agree, and takes the
// credentials from the login module.
func (c *Config) checkSASL(jaas *jaasLogin) error {
	if !c.UsesSASL() {
		for _, k := range []string{keySASLMechanism, keySASLJAASConfig} {
			if line, ok := c.lines[k]; ok {
				return c.errorf(line, "%s is set but %s; use %s or %s", k, c.protocolSetting(), ProtoSASLSSL, ProtoSASLPlaintext)
			}
		}
		return nil
	}
	if c.mechanism == "" {
		return c.errorf(c.lines[keySecurityProtocol], "%s=%s needs %s (%s, %s or %s); Kafka's default, GSSAPI (Kerberos), is not supported",
			keySecurityProtocol, c.protocol, keySASLMechanism, MechPlain, MechSCRAMSHA256, MechSCRAMSHA512)
	}
	module := plainLoginModule
	allowed := map[string]bool{"username": true, "password": true}
	if c.mechanism != MechPlain {
		module = scramLoginModule
		allowed["tokenauth"] = true
	}
	if jaas == nil {
		return errors.WithHintf(
			c.errorf(c.lines[keySecurityProtocol], "%s=%s needs %s with the username and password", keySecurityProtocol, c.protocol, keySASLJAASConfig),
			`add: %s=%s required username="..." password="...";`, keySASLJAASConfig, module)
	}
	line := c.lines[keySASLJAASConfig]
	if jaas.module != module {
		return c.errorf(line, "%s uses login module %s, but %s=%s needs %s", keySASLJAASConfig, jaas.module, keySASLMechanism, c.mechanism, module)
	}
	for _, opt := range sortedMapKeys(jaas.options) {
		if !allowed[opt] {
			return c.errorf(line, "%s: option %s is not supported by kcleanup for %s", keySASLJAASConfig, opt, c.mechanism)
		}
	}
	c.username, c.password = jaas.options["username"], jaas.options["password"]
	if c.username == "" || c.password == "" {
		return c.errorf(line, "%s: username and password must both be given and non-empty", keySASLJAASConfig)
	}
	if tok, ok := jaas.options["tokenauth"]; ok {
		switch strings.ToLower(tok) {
		case "true":
			c.scramToken = true
		case "false":
		default:
			return c.errorf(line, "%s: tokenauth must be true or false", keySASLJAASConfig)
		}
	}
	return nil
}

// checkTLS checks that ssl.* settings are used only with TLS and are complete and unambiguous,
// and fills in Kafka's default store type (JKS) for a store given by location.
func (c *Config) checkTLS() error {
	if !c.UsesTLS() {
		if ps := c.sortedSSLKeys(); len(ps) > 0 {
			return c.errorf(ps[0].line, "%s has no effect because %s; use %s or %s, or remove it", ps[0].key, c.protocolSetting(), ProtoSSL, ProtoSASLSSL)
		}
		return nil
	}
	type store struct {
		typ         *string
		typeKey     string
		location    string
		locationKey string
		inline      []string // keys of the inline form, all required together
	}
	stores := []store{
		{typ: &c.truststoreType, typeKey: keyTruststoreType, location: c.truststoreLocation, locationKey: keyTruststoreLocation,
			inline: []string{keyTruststoreCerts}},
		{typ: &c.keystoreType, typeKey: keyKeystoreType, location: c.keystoreLocation, locationKey: keyKeystoreLocation,
			inline: []string{keyKeystoreChain, keyKeystoreKey}},
	}
	for _, st := range stores {
		var given []string
		for _, k := range st.inline {
			if _, ok := c.lines[k]; ok {
				given = append(given, k)
			}
		}
		if st.location != "" && len(given) > 0 {
			return c.errorf(c.lines[given[0]], "%s and %s are both set; use one", st.locationKey, given[0])
		}
		if len(given) > 0 && len(given) < len(st.inline) {
			return c.errorf(c.lines[given[0]], "%s needs %s too", given[0], strings.Join(missing(st.inline, given), " and "))
		}
		if len(given) > 0 && *st.typ != storePEM {
			// Kafka's rule too: inline certificates and keys are PEM, and the type must say so.
			return errors.WithHintf(c.errorf(c.lines[given[0]], "%s needs %s=PEM (it is %s)", given[0], st.typeKey, orDefault(*st.typ, "not set; Kafka's default is JKS")),
				"add %s=PEM", st.typeKey)
		}
		if st.location != "" && *st.typ == "" {
			*st.typ = storeJKS // Kafka's default; the file's content decides between JKS and PKCS12
		}
	}
	if c.hasKeyPassword && c.keystoreLocation == "" && c.keystoreKeyPEM == "" {
		return c.errorf(c.lines[keyKeyPassword], "%s is set but there is no keystore (%s or %s)", keyKeyPassword, keyKeystoreLocation, keyKeystoreKey)
	}
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// protocolSetting says what security.protocol is, for messages: set on a line or defaulted.
func (c *Config) protocolSetting() string {
	if line, ok := c.lines[keySecurityProtocol]; ok {
		return fmt.Sprintf("%s is %s (line %d)", keySecurityProtocol, c.protocol, line)
	}
	return fmt.Sprintf("%s is not set (Kafka's default is %s)", keySecurityProtocol, ProtoPlaintext)
}

// sortedSSLKeys lists the ssl.* keys kcleanup maps (not those it ignores), in file order.
func (c *Config) sortedSSLKeys() []property {
	var ps []property
	for k, line := range c.lines {
		if note, known := kafkaClientKeys[k]; strings.HasPrefix(k, "ssl.") && known && note == "" {
			ps = append(ps, property{key: k, line: line})
		}
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].line < ps[j].line })
	return ps
}

// errorf formats an error located at a line of the file: "client.properties:7: ...".
func (c *Config) errorf(line int, format string, args ...any) error {
	if line <= 0 {
		return errors.Newf("%s: %s", c.name, fmt.Sprintf(format, args...))
	}
	return errors.Newf("%s:%d: %s", c.name, line, fmt.Sprintf(format, args...))
}

func sortedMapKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func missing(all, given []string) []string {
	var out []string
	for _, k := range all {
		found := false
		for _, g := range given {
			found = found || g == k
		}
		if !found {
			out = append(out, k)
		}
	}
	return out
}
