package clientconfig

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Opts turns the settings into franz-go options: client.id, TLS (kgo.DialTLSConfig) and SASL.
// It reads the stores the settings name; relative paths are relative to the working directory,
// as for Kafka's tools. Callers put their own defaults first: a client.id in the file wins.
func (c Config) Opts() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if c.hasClientID {
		opts = append(opts, kgo.ClientID(c.clientID))
	}
	if c.UsesTLS() {
		cfg, err := c.TLSConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if c.UsesSASL() {
		opts = append(opts, kgo.SASL(c.saslMechanism()))
	}
	return opts, nil
}

func (c Config) saslMechanism() sasl.Mechanism {
	switch c.mechanism {
	case MechPlain:
		return plain.Auth{User: c.username, Pass: c.password}.AsMechanism()
	case MechSCRAMSHA512:
		return scram.Auth{User: c.username, Pass: c.password, IsToken: c.scramToken}.AsSha512Mechanism()
	default: // Parse admits only the three mechanisms
		return scram.Auth{User: c.username, Pass: c.password, IsToken: c.scramToken}.AsSha256Mechanism()
	}
}

// TLSConfig builds the TLS client config (nil without TLS): TLS 1.2 or newer (Kafka's default
// enabled protocols, narrowed by ssl.enabled.protocols), the CA certificates of the truststore
// (the system roots without one), the client certificate of the keystore if any, and host name
// verification unless ssl.endpoint.identification.algorithm is empty. Without host name
// verification the chain is still verified, as in Kafka; only the name check is skipped.
func (c Config) TLSConfig() (*tls.Config, error) {
	if !c.UsesTLS() {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.minTLS != 0 {
		cfg.MinVersion, cfg.MaxVersion = c.minTLS, c.maxTLS
	}

	roots, err := c.trustedCerts()
	if err != nil {
		return nil, err
	}
	if roots != nil {
		cfg.RootCAs = roots
	}
	cert, ok, err := c.clientCert()
	if err != nil {
		return nil, err
	}
	if ok {
		cfg.Certificates = []tls.Certificate{cert}
	}

	if !c.verifyHostname {
		// Go cannot skip only the host name check: turn verification off and do the chain
		// part ourselves. VerifyConnection runs on every handshake, resumed ones included.
		roots := cfg.RootCAs // nil: the system roots
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("broker presented no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			return err
		}
	}
	return cfg, nil
}

// trustedCerts reads the truststore: nil (the system roots) when none is configured.
func (c Config) trustedCerts() (*x509.CertPool, error) {
	switch {
	case c.truststorePEM != "":
		pool, err := certPool(c.truststorePEM)
		return pool, c.keyError(keyTruststoreCerts, err)
	case c.truststoreLocation == "":
		return nil, nil
	}
	data, err := os.ReadFile(c.truststoreLocation)
	if err != nil {
		return nil, c.storeFileError(keyTruststoreLocation, c.truststoreLocation, err)
	}
	if c.truststoreType == storePEM {
		pool, err := certPool(string(data))
		return pool, c.keyError(keyTruststoreLocation, err)
	}
	certs, err := c.binaryTrustStore(data)
	if err != nil {
		return nil, err
	}
	pool, err := poolOf(certs, time.Now())
	return pool, c.keyError(keyTruststoreLocation, err)
}

// clientCert reads the keystore, if any.
func (c Config) clientCert() (tls.Certificate, bool, error) {
	switch {
	case c.keystoreChainPEM != "":
		cert, err := c.pemKeyPair(c.keystoreChainPEM, c.keystoreKeyPEM)
		if err != nil {
			return tls.Certificate{}, false, errors.Wrapf(err, "%s:%d: %s and %s", c.name, c.lines[keyKeystoreChain], keyKeystoreChain, keyKeystoreKey)
		}
		return cert, true, nil
	case c.keystoreLocation == "":
		return tls.Certificate{}, false, nil
	}
	data, err := os.ReadFile(c.keystoreLocation)
	if err != nil {
		return tls.Certificate{}, false, c.storeFileError(keyKeystoreLocation, c.keystoreLocation, err)
	}
	if c.keystoreType == storePEM {
		cert, err := c.pemKeyPair(string(data), string(data))
		return cert, err == nil, c.keyError(keyKeystoreLocation, err)
	}
	cert, err := c.binaryKeyStore(data)
	return cert, err == nil, err
}

// pemKeyPair is keyPair, refusing ssl.key.password: kcleanup does not decrypt PEM keys.
func (c Config) pemKeyPair(chain, key string) (tls.Certificate, error) {
	if c.hasKeyPassword {
		return tls.Certificate{}, errors.WithHint(errors.Newf("%s is set for a PEM key: encrypted PEM keys are not supported", keyKeyPassword),
			"decrypt the key (openssl pkey -in key.pem -out key-plain.pem), keep the file private (chmod 600) and remove ssl.key.password, "+
				"or use a PKCS12 or JKS keystore with its password")
	}
	return keyPair(chain, key)
}

// storeFileError is keyError for a store file that cannot be read, with a hint that names that
// file (the CA or key file), not the properties file that points to it.
func (c Config) storeFileError(key, path string, err error) error {
	what := "cannot read"
	if errors.Is(err, fs.ErrNotExist) {
		what = "there is no file"
	}
	return errors.WithHintf(c.keyError(key, err), "%s %s: fix %s in %s, or put the file there", what, path, key, c.name)
}

func (c Config) keyError(key string, err error) error {
	if err == nil {
		return nil
	}
	if line, ok := c.lines[key]; ok {
		return errors.Wrapf(err, "%s:%d: %s", c.name, line, key)
	}
	return errors.Wrapf(err, "%s: %s", c.name, key)
}

// certPool parses every CERTIFICATE of a PEM truststore. Unlike x509.CertPool.AppendCertsFromPEM
// it reports a certificate it cannot parse instead of skipping it.
func certPool(text string) (*x509.CertPool, error) {
	blocks, err := decodePEM(text)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	for i, b := range blocks {
		if b.Type != "CERTIFICATE" {
			return nil, errors.Newf("PEM block %d is a %s; a truststore holds only CERTIFICATE blocks", i+1, b.Type)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, errors.Wrapf(err, "certificate %d", i+1)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return poolOf(certs, time.Now())
}

// poolOf makes the pool, refusing a truststore whose every certificate has expired: Go would
// only say "certificate signed by unknown authority" at the handshake, which hides the cause.
func poolOf(certs []*x509.Certificate, now time.Time) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	expired := 0
	var last *x509.Certificate
	for _, c := range certs {
		pool.AddCert(c)
		if now.After(c.NotAfter) {
			expired++
			last = c
		}
	}
	if expired == len(certs) {
		return nil, errors.WithHint(errors.Newf("every certificate of the truststore has expired (%q expired on %s)",
			last.Subject.String(), last.NotAfter.UTC().Format(time.RFC3339)),
			"put the cluster's current CA certificate in the truststore")
	}
	return pool, nil
}

// keyPair builds the client certificate from PEM text holding the certificate chain (leaf first)
// and PEM text holding exactly one unencrypted private key (the same text for a keystore file).
func keyPair(chainText, keyText string) (tls.Certificate, error) {
	chain, err := decodePEM(chainText)
	if err != nil {
		return tls.Certificate{}, err
	}
	keys, err := decodePEM(keyText)
	if err != nil {
		return tls.Certificate{}, err
	}
	var certPEM, keyPEM []byte
	for _, b := range chain {
		if b.Type == "CERTIFICATE" {
			certPEM = append(certPEM, pem.EncodeToMemory(b)...)
		}
	}
	nKeys := 0
	for _, b := range keys {
		switch {
		case b.Type == "ENCRYPTED PRIVATE KEY":
			return tls.Certificate{}, errEncryptedKey()
		case strings.HasSuffix(b.Type, "PRIVATE KEY"):
			keyPEM = pem.EncodeToMemory(b)
			nKeys++
		}
	}
	switch {
	case certPEM == nil:
		return tls.Certificate{}, errors.New("no PEM CERTIFICATE found")
	case nKeys == 0:
		return tls.Certificate{}, errors.New("no PEM PRIVATE KEY found")
	case nKeys > 1:
		return tls.Certificate{}, errors.Newf("%d private keys found; want one", nKeys)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	return cert, errors.Wrap(err, "certificate and key")
}

func errEncryptedKey() error {
	return errors.WithHint(errors.New("the PEM private key is encrypted, which kcleanup does not support"),
		"decrypt it (openssl pkey -in key.pem -out key-plain.pem) and keep the file private (chmod 600), "+
			"or use a PKCS12 or JKS keystore (ssl.keystore.type, ssl.keystore.password)")
}

// decodePEM finds every PEM block in text. It is more lenient than encoding/pem about white
// space, as Kafka is: an inline value joined from continued lines arrives as
// "-----BEGIN CERTIFICATE----- MIIB... -----END CERTIFICATE-----" on one line. Text between
// blocks (such as openssl's "Bag Attributes") is ignored. Blocks with headers are refused:
// in practice they mean a legacy encrypted key.
func decodePEM(text string) ([]*pem.Block, error) {
	const begin, dashes = "-----BEGIN ", "-----"
	var blocks []*pem.Block
	for {
		i := strings.Index(text, begin)
		if i < 0 {
			return blocks, nil
		}
		text = text[i+len(begin):]
		j := strings.Index(text, dashes)
		if j < 0 {
			return nil, errors.New("PEM BEGIN line not closed by -----")
		}
		typ := text[:j]
		if strings.ContainsAny(typ, "\r\n") {
			return nil, errors.New("PEM BEGIN line not closed by -----")
		}
		text = text[j+len(dashes):]
		end := "-----END " + typ + dashes
		k := strings.Index(text, end)
		if k < 0 {
			return nil, errors.Newf("PEM block %s has no %q", typ, end)
		}
		body := text[:k]
		text = text[k+len(end):]
		if strings.Contains(body, ":") {
			if strings.Contains(body, "ENCRYPTED") {
				return nil, errEncryptedKey()
			}
			return nil, errors.Newf("PEM block %s has headers, which are not supported", typ)
		}
		der, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(body), ""))
		if err != nil {
			return nil, errors.Newf("PEM block %s: invalid base64", typ)
		}
		blocks = append(blocks, &pem.Block{Type: typ, Bytes: der})
	}
}
