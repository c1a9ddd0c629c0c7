package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/cockroachdb/errors"
)

// maxCommandConfigSize bounds what we read: a client properties file is a few kilobytes even with
// inline certificates. A larger input is a mistake (the wrong file), not a config.
const maxCommandConfigSize = 1 << 20

// Protocols and mechanisms, spelled as Kafka spells them.
const (
	protoPlaintext     = "PLAINTEXT"
	protoSSL           = "SSL"
	protoSASLPlaintext = "SASL_PLAINTEXT"
	protoSASLSSL       = "SASL_SSL"

	mechPlain       = "PLAIN"
	mechSCRAMSHA256 = "SCRAM-SHA-256"
	mechSCRAMSHA512 = "SCRAM-SHA-512"

	plainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	scramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// Supported keys of --command-config. Anything else is rejected: a setting silently ignored is a
// setting the operator believes is in force.
const (
	keyClientID           = "client.id"
	keySecurityProtocol   = "security.protocol"
	keySASLMechanism      = "sasl.mechanism"
	keySASLJAASConfig     = "sasl.jaas.config"
	keyTruststoreType     = "ssl.truststore.type"
	keyTruststoreLocation = "ssl.truststore.location"
	keyTruststoreCerts    = "ssl.truststore.certificates"
	keyKeystoreType       = "ssl.keystore.type"
	keyKeystoreLocation   = "ssl.keystore.location"
	keyKeystoreChain      = "ssl.keystore.certificate.chain"
	keyKeystoreKey        = "ssl.keystore.key"
	keyEndpointIdent      = "ssl.endpoint.identification.algorithm"
)

var supportedKeys = []string{
	keyClientID, keySASLJAASConfig, keySASLMechanism, keySecurityProtocol, keyEndpointIdent,
	keyKeystoreChain, keyKeystoreKey, keyKeystoreLocation, keyKeystoreType,
	keyTruststoreCerts, keyTruststoreLocation, keyTruststoreType,
}

// clientSecurity is what a --command-config file says about how to reach the cluster. It holds
// secrets: its String method redacts them, and no error message quotes them.
type clientSecurity struct {
	name  string         // the file it came from, for messages
	lines map[string]int // key → line it was set on, for messages

	protocol   string // PLAINTEXT (Kafka's default), SSL, SASL_PLAINTEXT or SASL_SSL
	mechanism  string // PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; "" without SASL
	username   string
	password   string
	scramToken bool // ScramLoginModule tokenauth=true: the credentials are a delegation token

	clientID    string
	hasClientID bool

	truststoreLocation string // PEM file of CA certificates
	truststorePEM      string // or the certificates inline
	keystoreLocation   string // PEM file holding the client certificate chain and its key
	keystoreChainPEM   string // or the chain inline...
	keystoreKeyPEM     string // ...and the key inline
	verifyHostname     bool   // ssl.endpoint.identification.algorithm=https, Kafka's default
}

func (s clientSecurity) usesTLS() bool {
	return s.protocol == protoSSL || s.protocol == protoSASLSSL
}

func (s clientSecurity) usesSASL() bool {
	return s.protocol == protoSASLPlaintext || s.protocol == protoSASLSSL
}

// String describes the settings without the secrets, so that a stray %v cannot leak them.
func (s clientSecurity) String() string {
	return fmt.Sprintf("clientSecurity{protocol=%s mechanism=%s user=%q password=<redacted> truststore=%q keystore=%q verifyHostname=%t}",
		s.protocol, s.mechanism, s.username, s.truststoreLocation, s.keystoreLocation, s.verifyHostname)
}

// GoString is String, for %#v.
func (s clientSecurity) GoString() string { return s.String() }

// loadCommandConfig reads and parses the --command-config file at path.
func loadCommandConfig(path string) (clientSecurity, error) {
	f, err := os.Open(path)
	if err != nil {
		return clientSecurity{}, errors.Wrap(err, "--command-config")
	}
	defer f.Close()
	return parseCommandConfig(f, path)
}

// parseCommandConfig parses a Kafka client properties file (the --command-config of Kafka's own
// tools) into the security settings kcleanup supports. It reads no other file: locations named in
// it are opened by kgoOpts. Every error names the file, the line and the key.
func parseCommandConfig(r io.Reader, name string) (clientSecurity, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxCommandConfigSize+1))
	if err != nil {
		return clientSecurity{}, errors.Wrapf(err, "read %s", name)
	}
	if len(data) > maxCommandConfigSize {
		return clientSecurity{}, errors.Newf("%s: larger than %d bytes; is it the right file?", name, maxCommandConfigSize)
	}
	props, err := parseProperties(name, string(data))
	if err != nil {
		return clientSecurity{}, err
	}
	s := clientSecurity{
		name:           name,
		lines:          map[string]int{},
		protocol:       protoPlaintext,
		verifyHostname: true,
	}
	var jaas *jaasLogin
	for _, p := range props {
		if first, dup := s.lines[p.key]; dup {
			return clientSecurity{}, s.errorf(p.line, "%s is set twice (first on line %d); keep one", p.key, first)
		}
		s.lines[p.key] = p.line
		// Kafka trims every setting's value (ConfigDef.parseType) with Java's String.trim.
		v := strings.TrimFunc(p.value, func(r rune) bool { return r <= ' ' })
		if err := s.set(p, v, &jaas); err != nil {
			return clientSecurity{}, err
		}
	}
	if err := s.checkSASL(jaas); err != nil {
		return clientSecurity{}, err
	}
	if err := s.checkTLS(); err != nil {
		return clientSecurity{}, err
	}
	return s, nil
}

// set applies one key. Checks that involve several keys wait for checkSASL and checkTLS.
func (s *clientSecurity) set(p property, v string, jaas **jaasLogin) error {
	switch p.key {
	case keyClientID:
		s.clientID, s.hasClientID = v, true
	case keySecurityProtocol:
		switch u := strings.ToUpper(v); u {
		case protoPlaintext, protoSSL, protoSASLPlaintext, protoSASLSSL:
			s.protocol = u
		default:
			return s.errorf(p.line, "%s %q is not a Kafka security protocol: use %s, %s, %s or %s",
				p.key, v, protoPlaintext, protoSSL, protoSASLPlaintext, protoSASLSSL)
		}
	case keySASLMechanism:
		switch u := strings.ToUpper(v); u {
		case mechPlain, mechSCRAMSHA256, mechSCRAMSHA512:
			s.mechanism = u
		default:
			return s.errorf(p.line, "%s %q is not supported: use %s, %s or %s (GSSAPI/Kerberos and OAUTHBEARER are not supported)",
				p.key, v, mechPlain, mechSCRAMSHA256, mechSCRAMSHA512)
		}
	case keySASLJAASConfig:
		l, err := parseJAAS(v)
		if err != nil {
			return errors.Wrapf(err, "%s:%d: %s", s.name, p.line, p.key)
		}
		*jaas = &l
	case keyTruststoreType, keyKeystoreType:
		if err := s.checkStoreType(p, v); err != nil {
			return err
		}
	case keyEndpointIdent:
		switch {
		case v == "":
			s.verifyHostname = false
		case strings.EqualFold(v, "https"):
			s.verifyHostname = true
		default:
			return s.errorf(p.line, "%s %q is not supported: use https (verify the broker's host name, the default) or an empty value (do not)", p.key, v)
		}
	case keyTruststoreLocation, keyTruststoreCerts, keyKeystoreLocation, keyKeystoreChain, keyKeystoreKey:
		if v == "" {
			return s.errorf(p.line, "%s is empty", p.key)
		}
		*map[string]*string{
			keyTruststoreLocation: &s.truststoreLocation,
			keyTruststoreCerts:    &s.truststorePEM,
			keyKeystoreLocation:   &s.keystoreLocation,
			keyKeystoreChain:      &s.keystoreChainPEM,
			keyKeystoreKey:        &s.keystoreKeyPEM,
		}[p.key] = v
	case "ssl.key.password":
		return errors.WithHint(
			s.errorf(p.line, "%s: encrypted private keys are not supported", p.key),
			"decrypt the key (openssl pkey -in key.pem -out key-plain.pem), keep the file private (chmod 600), and remove ssl.key.password")
	case "ssl.truststore.password", "ssl.keystore.password":
		return errors.WithHint(
			s.errorf(p.line, "%s is for JKS and PKCS12 stores, which kcleanup does not read", p.key),
			"use PEM files (ssl.truststore.type=PEM, ssl.keystore.type=PEM) and remove the password")
	default:
		return s.errorf(p.line, "unsupported key %q (supported: %s)", p.key, strings.Join(sortedKeys(), ", "))
	}
	return nil
}

func (s *clientSecurity) checkStoreType(p property, v string) error {
	switch strings.ToUpper(v) {
	case "PEM":
		return nil
	case "JKS", "PKCS12":
		hint := "export the CA certificates to PEM: keytool -list -rfc -keystore truststore.jks > ca.pem " +
			"(or openssl pkcs12 -in truststore.p12 -nokeys -out ca.pem), then set " +
			"ssl.truststore.type=PEM and ssl.truststore.location=ca.pem"
		if p.key == keyKeystoreType {
			hint = "convert the keystore to PEM: keytool -importkeystore -srckeystore keystore.jks " +
				"-destkeystore keystore.p12 -deststoretype PKCS12, then openssl pkcs12 -in keystore.p12 -nodes -out client.pem; " +
				"set ssl.keystore.type=PEM and ssl.keystore.location=client.pem (keep it private: chmod 600)"
		}
		return errors.WithHint(s.errorf(p.line, "%s %s is not supported: kcleanup reads PEM only; convert the store to PEM", p.key, v), hint)
	default:
		return s.errorf(p.line, "%s %q is not supported: use PEM", p.key, v)
	}
}

// checkSASL checks that protocol, mechanism and JAAS login module agree, and takes the
// credentials from the login module.
func (s *clientSecurity) checkSASL(jaas *jaasLogin) error {
	if !s.usesSASL() {
		for _, k := range []string{keySASLMechanism, keySASLJAASConfig} {
			if line, ok := s.lines[k]; ok {
				return s.errorf(line, "%s is set but %s; use %s or %s", k, s.protocolSetting(), protoSASLSSL, protoSASLPlaintext)
			}
		}
		return nil
	}
	if s.mechanism == "" {
		return s.errorf(s.lines[keySecurityProtocol], "%s=%s needs %s (%s, %s or %s); Kafka's default, GSSAPI (Kerberos), is not supported",
			keySecurityProtocol, s.protocol, keySASLMechanism, mechPlain, mechSCRAMSHA256, mechSCRAMSHA512)
	}
	module := plainLoginModule
	allowed := map[string]bool{"username": true, "password": true}
	if s.mechanism != mechPlain {
		module = scramLoginModule
		allowed["tokenauth"] = true
	}
	if jaas == nil {
		return errors.WithHintf(
			s.errorf(s.lines[keySecurityProtocol], "%s=%s needs %s with the username and password", keySecurityProtocol, s.protocol, keySASLJAASConfig),
			`add: %s=%s required username="..." password="...";`, keySASLJAASConfig, module)
	}
	line := s.lines[keySASLJAASConfig]
	if jaas.module != module {
		return s.errorf(line, "%s uses login module %s, but %s=%s needs %s", keySASLJAASConfig, jaas.module, keySASLMechanism, s.mechanism, module)
	}
	for _, opt := range sortedMapKeys(jaas.options) {
		if !allowed[opt] {
			return s.errorf(line, "%s: option %s is not supported by kcleanup for %s", keySASLJAASConfig, opt, s.mechanism)
		}
	}
	s.username, s.password = jaas.options["username"], jaas.options["password"]
	if s.username == "" || s.password == "" {
		return s.errorf(line, "%s: username and password must both be given and non-empty", keySASLJAASConfig)
	}
	if tok, ok := jaas.options["tokenauth"]; ok {
		switch strings.ToLower(tok) {
		case "true":
			s.scramToken = true
		case "false":
		default:
			return s.errorf(line, "%s: tokenauth must be true or false", keySASLJAASConfig)
		}
	}
	return nil
}

// checkTLS checks that ssl.* settings are used only with TLS and are complete and unambiguous.
func (s *clientSecurity) checkTLS() error {
	if !s.usesTLS() {
		if ps := s.sortedSSLKeys(); len(ps) > 0 {
			return s.errorf(ps[0].line, "%s has no effect because %s; use %s or %s, or remove it", ps[0].key, s.protocolSetting(), protoSSL, protoSASLSSL)
		}
		return nil
	}
	type store struct {
		typeKey     string
		location    string
		locationKey string
		inline      []string // keys of the inline form, all required together
	}
	stores := []store{
		{typeKey: keyTruststoreType, location: s.truststoreLocation, locationKey: keyTruststoreLocation,
			inline: []string{keyTruststoreCerts}},
		{typeKey: keyKeystoreType, location: s.keystoreLocation, locationKey: keyKeystoreLocation,
			inline: []string{keyKeystoreChain, keyKeystoreKey}},
	}
	for _, st := range stores {
		var given []string
		for _, k := range st.inline {
			if _, ok := s.lines[k]; ok {
				given = append(given, k)
			}
		}
		if st.location != "" && len(given) > 0 {
			return s.errorf(s.lines[given[0]], "%s and %s are both set; use one", st.locationKey, given[0])
		}
		if len(given) > 0 && len(given) < len(st.inline) {
			return s.errorf(s.lines[given[0]], "%s needs %s too", given[0], strings.Join(missing(st.inline, given), " and "))
		}
		if st.location == "" && len(given) == 0 {
			continue
		}
		if _, ok := s.lines[st.typeKey]; !ok {
			first := st.locationKey
			if st.location == "" {
				first = given[0]
			}
			return s.errorf(s.lines[first], "%s needs %s=PEM (Kafka's default store type is JKS, which kcleanup does not read)", first, st.typeKey)
		}
	}
	return nil
}

// protocolSetting says what security.protocol is, for messages: set on a line or defaulted.
func (s *clientSecurity) protocolSetting() string {
	if line, ok := s.lines[keySecurityProtocol]; ok {
		return fmt.Sprintf("%s is %s (line %d)", keySecurityProtocol, s.protocol, line)
	}
	return fmt.Sprintf("%s is not set (Kafka's default is %s)", keySecurityProtocol, protoPlaintext)
}

func (s *clientSecurity) sortedSSLKeys() []property {
	var ps []property
	for k, line := range s.lines {
		if strings.HasPrefix(k, "ssl.") {
			ps = append(ps, property{key: k, line: line})
		}
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].line < ps[j].line })
	return ps
}

// errorf formats an error located at a line of the file: "client.properties:7: ...".
func (s *clientSecurity) errorf(line int, format string, args ...any) error {
	if line <= 0 {
		return errors.Newf("%s: %s", s.name, fmt.Sprintf(format, args...))
	}
	return errors.Newf("%s:%d: %s", s.name, line, fmt.Sprintf(format, args...))
}

func sortedKeys() []string {
	ks := append([]string(nil), supportedKeys...)
	sort.Strings(ks)
	return ks
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
