package clientconfig

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
)

const (
	testPassword = "TOPSECRET-pw"
	plainJAAS    = `org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="` + testPassword + `";`
	scramJAAS    = `org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="` + testPassword + `";`
)

func parseConfigText(text string) (Config, error) {
	return Parse(strings.NewReader(text), "client.properties")
}

func TestParseCommandConfig(t *testing.T) {
	for _, tc := range []struct {
		name  string
		text  string
		check func(t *testing.T, s Config)
	}{
		{"empty file is Kafka's default PLAINTEXT", "# nothing\n", func(t *testing.T, s Config) {
			expect(t, s.protocol == ProtoPlaintext && s.verifyHostname && !s.hasClientID && !s.UsesTLS() && !s.UsesSASL(), s)
		}},
		{"client.id", "client.id=my-app", func(t *testing.T, s Config) {
			expect(t, s.hasClientID && s.clientID == "my-app", s)
		}},
		{"protocol is case-insensitive and values are trimmed", "security.protocol = ssl \t", func(t *testing.T, s Config) {
			expect(t, s.protocol == ProtoSSL && s.UsesTLS() && !s.UsesSASL(), s)
		}},
		{"SASL_SSL with PLAIN", "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=" + plainJAAS, func(t *testing.T, s Config) {
			expect(t, s.protocol == ProtoSASLSSL && s.mechanism == MechPlain && s.username == "alice" && s.password == testPassword && s.UsesTLS(), s)
		}},
		{"SASL_PLAINTEXT with SCRAM-SHA-256 delegation token", "security.protocol: SASL_PLAINTEXT\nsasl.mechanism: SCRAM-SHA-256\n" +
			`sasl.jaas.config: org.apache.kafka.common.security.scram.ScramLoginModule required username="tok" password="hmac" tokenauth="true";`,
			func(t *testing.T, s Config) {
				expect(t, s.mechanism == MechSCRAMSHA256 && s.scramToken && s.username == "tok" && !s.UsesTLS(), s)
			}},
		{"SCRAM-SHA-512, lower case, jaas continued over lines", "security.protocol sasl_ssl\nsasl.mechanism scram-sha-512\n" +
			"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n" +
			"    username=\"alice\" \\\n    password=\"" + testPassword + "\" \\\n    tokenauth=false;\n",
			func(t *testing.T, s Config) {
				expect(t, s.mechanism == MechSCRAMSHA512 && !s.scramToken && s.password == testPassword, s)
			}},
		{"PEM truststore file", "security.protocol=SSL\nssl.truststore.type=pem\nssl.truststore.location=/etc/kafka/ca.pem", func(t *testing.T, s Config) {
			expect(t, s.truststoreLocation == "/etc/kafka/ca.pem", s)
		}},
		{"PEM truststore inline", "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.certificates=-----BEGIN CERTIFICATE----- \\\n  AAAA \\\n  -----END CERTIFICATE-----",
			func(t *testing.T, s Config) {
				expect(t, s.truststorePEM == "-----BEGIN CERTIFICATE----- AAAA -----END CERTIFICATE-----", s)
			}},
		{"PEM type without a store uses the system roots", "security.protocol=SSL\nssl.truststore.type=PEM", func(t *testing.T, s Config) {
			expect(t, s.truststoreLocation == "" && s.truststorePEM == "", s)
		}},
		{"PEM keystore file", "security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.location=client.pem", func(t *testing.T, s Config) {
			expect(t, s.keystoreLocation == "client.pem", s)
		}},
		{"PEM keystore inline", "security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.certificate.chain=C\nssl.keystore.key=K", func(t *testing.T, s Config) {
			expect(t, s.keystoreChainPEM == "C" && s.keystoreKeyPEM == "K", s)
		}},
		{"host name verification off", "security.protocol=SSL\nssl.endpoint.identification.algorithm=", func(t *testing.T, s Config) {
			expect(t, !s.verifyHostname, s)
		}},
		{"host name verification on", "security.protocol=SASL_SSL\nssl.endpoint.identification.algorithm=HTTPS\nsasl.mechanism=PLAIN\nsasl.jaas.config=" + plainJAAS,
			func(t *testing.T, s Config) { expect(t, s.verifyHostname, s) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parseConfigText(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, s)
		})
	}
}

func expect(t *testing.T, ok bool, s Config) {
	t.Helper()
	if !ok {
		t.Fatalf("unexpected result: %v (password %q)", s, s.password)
	}
}

func TestParseCommandConfigErrors(t *testing.T) {
	sasl := "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
	for _, tc := range []struct {
		name string
		text string
		want []string // fragments of the message; the first names file and line
		hint string   // a fragment of a hint, if any
	}{
		{"unknown key: a typo", "client.id=a\n\nssl.truststore.locaton=x.jks",
			[]string{`client.properties:3: unknown key "ssl.truststore.locaton": not a setting of Kafka's clients`}, "did you mean ssl.truststore.location?"},
		{"unknown key far from any", "schema.registry.url=http://x", []string{`client.properties:1: unknown key "schema.registry.url"`}, "remove it"},
		{"duplicate key", "client.id=a\nclient.id=b", []string{"client.properties:2: client.id is set twice (first on line 1)"}, ""},
		{"bad protocol", "security.protocol=TLS", []string{`client.properties:1: security.protocol "TLS" is not a Kafka security protocol`, "SASL_SSL"}, ""},
		{"GSSAPI", "security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI", []string{`client.properties:2: sasl.mechanism "GSSAPI" is not supported`}, ""},
		{"OAUTHBEARER", "sasl.mechanism=OAUTHBEARER", []string{`client.properties:1: sasl.mechanism "OAUTHBEARER" is not supported`}, ""},
		{"jaas syntax", sasl + "sasl.jaas.config=org.x.PlainLoginModule required username=\"u\"", []string{"client.properties:3: sasl.jaas.config: login module entry not terminated by ';'"}, ""},
		{"other store type", "ssl.truststore.type=BCFKS", []string{`client.properties:1: ssl.truststore.type "BCFKS" is not supported: use PEM, JKS or PKCS12`}, ""},
		{"TLS 1.1", "security.protocol=SSL\nssl.enabled.protocols=TLSv1.2,TLSv1.1", []string{`client.properties:2: ssl.enabled.protocols: "TLSv1.1" is not supported`}, ""},
		{"key password without keystore", "security.protocol=SSL\nssl.key.password=x", []string{"client.properties:2: ssl.key.password is set but there is no keystore"}, ""},
		{"bad endpoint algorithm", "ssl.endpoint.identification.algorithm=ldaps", []string{`client.properties:1: ssl.endpoint.identification.algorithm "ldaps" is not supported`}, ""},
		{"empty location", "security.protocol=SSL\nssl.truststore.location=  ", []string{"client.properties:2: ssl.truststore.location is empty"}, ""},
		{"truststore password without TLS", "ssl.truststore.password=changeit", []string{"client.properties:1: ssl.truststore.password has no effect because security.protocol is not set"}, ""},
		{"mechanism without SASL protocol", "client.id=a\nsasl.mechanism=PLAIN",
			[]string{"client.properties:2: sasl.mechanism is set but security.protocol is not set (Kafka's default is PLAINTEXT); use SASL_SSL or SASL_PLAINTEXT"}, ""},
		{"jaas with SSL protocol", "security.protocol=SSL\nsasl.jaas.config=" + plainJAAS,
			[]string{"client.properties:2: sasl.jaas.config is set but security.protocol is SSL (line 1)"}, ""},
		{"SASL without mechanism", "client.id=a\nsecurity.protocol=SASL_SSL\nsasl.jaas.config=" + plainJAAS,
			[]string{"client.properties:2: security.protocol=SASL_SSL needs sasl.mechanism", "GSSAPI (Kerberos), is not supported"}, ""},
		{"SASL without jaas", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256",
			[]string{"client.properties:1: security.protocol=SASL_PLAINTEXT needs sasl.jaas.config"}, "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required"},
		{"module does not fit mechanism", "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=" + plainJAAS,
			[]string{"client.properties:3: sasl.jaas.config uses login module org.apache.kafka.common.security.plain.PlainLoginModule, but sasl.mechanism=SCRAM-SHA-512 needs org.apache.kafka.common.security.scram.ScramLoginModule"}, ""},
		{"unknown module", sasl + "sasl.jaas.config=com.example.Login required username=u password=p;",
			[]string{"client.properties:3: sasl.jaas.config uses login module com.example.Login"}, ""},
		{"unsupported option", sasl + `sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p" serviceName="kafka";`,
			[]string{"client.properties:3: sasl.jaas.config: option serviceName is not supported by kcleanup for PLAIN"}, ""},
		{"tokenauth with PLAIN", sasl + `sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p" tokenauth=true;`,
			[]string{"option tokenauth is not supported by kcleanup for PLAIN"}, ""},
		{"missing password", sasl + `sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="u";`,
			[]string{"client.properties:3: sasl.jaas.config: username and password must both be given and non-empty"}, ""},
		{"empty username", sasl + `sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="" password="p";`,
			[]string{"username and password must both be given and non-empty"}, ""},
		{"bad tokenauth", "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config=" + strings.TrimSuffix(scramJAAS, ";") + " tokenauth=maybe;",
			[]string{"client.properties:3: sasl.jaas.config: tokenauth must be true or false"}, ""},
		{"ssl key without TLS", "client.id=a\nssl.truststore.type=PEM\nssl.truststore.location=ca.pem",
			[]string{"client.properties:2: ssl.truststore.type has no effect because security.protocol is not set (Kafka's default is PLAINTEXT); use SSL or SASL_SSL, or remove it"}, ""},
		{"ssl key with SASL_PLAINTEXT", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config=" + plainJAAS + "\nssl.endpoint.identification.algorithm=",
			[]string{"client.properties:4: ssl.endpoint.identification.algorithm has no effect because security.protocol is SASL_PLAINTEXT (line 1)"}, ""},
		{"truststore twice", "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=ca.pem\nssl.truststore.certificates=X",
			[]string{"client.properties:4: ssl.truststore.location and ssl.truststore.certificates are both set; use one"}, ""},
		{"keystore location and inline", "security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.location=c.pem\nssl.keystore.key=K",
			[]string{"client.properties:4: ssl.keystore.location and ssl.keystore.key are both set; use one"}, ""},
		{"chain without key", "security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.certificate.chain=C",
			[]string{"client.properties:3: ssl.keystore.certificate.chain needs ssl.keystore.key too"}, ""},
		{"key without chain", "security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.key=K",
			[]string{"client.properties:3: ssl.keystore.key needs ssl.keystore.certificate.chain too"}, ""},
		{"inline certificates without type", "security.protocol=SSL\n\nssl.truststore.certificates=X",
			[]string{"client.properties:3: ssl.truststore.certificates needs ssl.truststore.type=PEM"}, ""},
		{"keystore without type", "security.protocol=SSL\nssl.keystore.certificate.chain=C\nssl.keystore.key=K",
			[]string{"client.properties:2: ssl.keystore.certificate.chain needs ssl.keystore.type=PEM"}, ""},
		{"malformed escape", "client.id=a\\u00zz", []string{`client.properties:1: value of client.id: malformed \uXXXX escape`}, ""},
		{"not UTF-8", "client.id=a\n#\xfe", []string{"client.properties:2: not valid UTF-8"}, ""},
		{"too large", strings.Repeat("#", maxSize+1), []string{"client.properties: larger than 1048576 bytes"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseConfigText(tc.text)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not hold %q", err, w)
				}
			}
			hints := strings.Join(errors.GetAllHints(err), "\n")
			if !strings.Contains(hints, tc.hint) {
				t.Errorf("hints %q do not hold %q", hints, tc.hint)
			}
			if strings.Contains(err.Error()+hints, testPassword) {
				t.Errorf("error reveals the password: %v", err)
			}
		})
	}
}

func TestClientSecurityStringRedactsThePassword(t *testing.T) {
	s, err := parseConfigText("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=" + plainJAAS)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"%v", "%+v", "%s", "%#v"} {
		if out := fmt.Sprintf(f, s); strings.Contains(out, testPassword) || !strings.Contains(out, "alice") {
			t.Errorf("%s: %s", f, out)
		}
	}
}

func TestLoadCommandConfigMissingFile(t *testing.T) {
	_, err := Load(t.TempDir() + "/nope.properties")
	if err == nil || !strings.Contains(err.Error(), "--command-config") || !strings.Contains(err.Error(), "nope.properties") {
		t.Fatalf("error %v", err)
	}
}

// commandConfigSeeds are realistic configs (valid and broken) for the fuzz target.
var commandConfigSeeds = []string{
	"",
	"security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=" + scramJAAS + "\nssl.truststore.type=PEM\nssl.truststore.location=/etc/kafka/ca.pem\n",
	"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n  username=\"u\" \\\n  password=\"p\\\"q\";\n",
	"security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.certificates=-----BEGIN CERTIFICATE----- \\\nMIIB \\\n-----END CERTIFICATE-----\n",
	"security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.certificate.chain=-----BEGIN CERTIFICATE-----\\nAAAA\\n-----END CERTIFICATE-----\nssl.keystore.key=-----BEGIN PRIVATE KEY-----\\nAAAA\\n-----END PRIVATE KEY-----\n",
	"security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.certificate.chain=-----BEGIN CERTIFICATE-----\nssl.keystore.key=-----BEGIN ENCRYPTED PRIVATE KEY----- Proc-Type: 4,ENCRYPTED -----END ENCRYPTED PRIVATE KEY-----\n",
	"# comment\n! comment\n  client.id : my\\ app\\u0021\nssl.endpoint.identification.algorithm=\n",
	"sasl.jaas.config=a b c=\"\\",
	"ssl.truststore.type=JKS\nssl.key.password=x\nbogus=1\n",
	"a=\\uD83D\\uDE00\\u12",
	"security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=u password=p tokenauth=true; /* c */\n",
}

// FuzzParseCommandConfig: no input makes the parser (or, for inline PEM, the TLS setup) panic;
// every error names the file; an accepted config is consistent.
func FuzzParseCommandConfig(f *testing.F) {
	for _, s := range commandConfigSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(bytes.NewReader(data), "fuzz.properties")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.properties") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		switch s.protocol {
		case ProtoPlaintext, ProtoSSL, ProtoSASLPlaintext, ProtoSASLSSL:
		default:
			t.Fatalf("protocol %q accepted", s.protocol)
		}
		if s.UsesSASL() && (s.mechanism == "" || s.username == "" || s.password == "") {
			t.Fatalf("SASL accepted without credentials: %v", s)
		}
		if !s.UsesSASL() && (s.mechanism != "" || s.username != "") {
			t.Fatalf("SASL settings kept without SASL: %v", s)
		}
		if !s.UsesTLS() && (s.truststoreLocation != "" || s.truststorePEM != "" || s.keystoreLocation != "" || s.keystoreChainPEM != "" || !s.verifyHostname) {
			t.Fatalf("TLS settings kept without TLS: %v", s)
		}
		// Build the options too, unless that would open files the fuzzer named.
		if s.truststoreLocation == "" && s.keystoreLocation == "" {
			_, _ = s.Opts()
		}
	})
}

// TestKafkaKeysAreAccepted: a file as operators write it for Kafka's tools parses; the keys
// kcleanup does not use each get one note naming the file, the line and the key.
func TestKafkaKeysAreAccepted(t *testing.T) {
	text := "bootstrap.servers=kafka-1:9093\nrequest.timeout.ms=20000\nsecurity.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n" +
		"sasl.jaas.config=" + scramJAAS + "\nssl.truststore.location=/etc/kafka/truststore.jks\nssl.truststore.password=changeit\n" +
		"ssl.enabled.protocols=TLSv1.3\nsasl.kerberos.service.name=kafka\nssl.cipher.suites=TLS_AES_128_GCM_SHA256\n"
	s, err := parseConfigText(text)
	if err != nil {
		t.Fatal(err)
	}
	if s.truststoreType != storeJKS || s.truststorePassword != "changeit" || s.minTLS != 0x0304 || s.maxTLS != 0x0304 {
		t.Errorf("parsed %v (min %x max %x)", s, s.minTLS, s.maxTLS)
	}
	want := []string{
		"client.properties:1: bootstrap.servers is ignored: the brokers come from -b/--bootstrap-server",
		"client.properties:2: request.timeout.ms is ignored: kcleanup bounds every request with --timeout",
		"client.properties:9: sasl.kerberos.service.name is ignored: it belongs to a SASL mechanism kcleanup does not support",
		"client.properties:10: ssl.cipher.suites is ignored: it configures Java's TLS implementation",
	}
	notes := s.Notes()
	if len(notes) != len(want) {
		t.Fatalf("notes %q", notes)
	}
	for i, w := range want {
		if !strings.HasPrefix(notes[i], w) || strings.Contains(notes[i], "\n") {
			t.Errorf("note %d %q, want %q...", i, notes[i], w)
		}
	}
	if p := s.Principal(); p != "User:alice" {
		t.Errorf("principal %q", p)
	}
}

func TestNearestKey(t *testing.T) {
	for in, want := range map[string]string{
		"ssl.truststore.locaton": "ssl.truststore.location",
		"sasl.mechanisms":        "sasl.mechanism",
		"security.protcol":       "security.protocol",
		"sasl_jaas_config":       "sasl.jaas.config",
		"schema.registry.url":    "",
	} {
		if got := nearestKey(in); got != want {
			t.Errorf("nearestKey(%q) = %q, want %q", in, got, want)
		}
	}
}
