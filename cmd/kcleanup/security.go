package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// kgoOpts turns the settings into franz-go options: client.id, TLS (kgo.DialTLSConfig) and SASL.
// It reads the PEM files the settings name; relative paths are relative to the working
// directory, as for Kafka's tools.
func (s clientSecurity) kgoOpts() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if s.hasClientID {
		opts = append(opts, kgo.ClientID(s.clientID))
	}
	if s.usesTLS() {
		cfg, err := s.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if s.usesSASL() {
		opts = append(opts, kgo.SASL(s.saslMechanism()))
	}
	return opts, nil
}

func (s clientSecurity) saslMechanism() sasl.Mechanism {
	switch s.mechanism {
	case mechPlain:
		return plain.Auth{User: s.username, Pass: s.password}.AsMechanism()
	case mechSCRAMSHA512:
		return scram.Auth{User: s.username, Pass: s.password, IsToken: s.scramToken}.AsSha512Mechanism()
	default: // parseCommandConfig admits only the three mechanisms
		return scram.Auth{User: s.username, Pass: s.password, IsToken: s.scramToken}.AsSha256Mechanism()
	}
}

// tlsConfig builds the TLS client config: TLS 1.2 or newer (Kafka's default enabled protocols),
// the CA certificates of the truststore (the system roots without one), the client certificate
// of the keystore if any, and host name verification unless
// ssl.endpoint.identification.algorithm is empty. Without host name verification the chain is
// still verified, as in Kafka; only the name check is skipped.
func (s clientSecurity) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}

	trustPEM, trustKey, err := s.pemSource(s.truststoreLocation, keyTruststoreLocation, s.truststorePEM, keyTruststoreCerts)
	if err != nil {
		return nil, err
	}
	if trustPEM != "" {
		pool, err := certPool(trustPEM)
		if err != nil {
			return nil, s.keyError(trustKey, err)
		}
		cfg.RootCAs = pool
	}

	switch {
	case s.keystoreLocation != "":
		text, _, err := s.pemSource(s.keystoreLocation, keyKeystoreLocation, "", "")
		if err != nil {
			return nil, err
		}
		cert, err := keyPair(text, text)
		if err != nil {
			return nil, s.keyError(keyKeystoreLocation, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	case s.keystoreChainPEM != "":
		cert, err := keyPair(s.keystoreChainPEM, s.keystoreKeyPEM)
		if err != nil {
			return nil, errors.Wrapf(err, "%s:%d: %s and %s", s.name, s.lines[keyKeystoreChain], keyKeystoreChain, keyKeystoreKey)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}

	if !s.verifyHostname {
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

// pemSource returns the PEM text of a store given by file (read now) or inline, and the key it
// came from.
func (s clientSecurity) pemSource(location, locationKey, inline, inlineKey string) (text, key string, err error) {
	if location == "" {
		return inline, inlineKey, nil
	}
	data, err := os.ReadFile(location)
	if err != nil {
		return "", locationKey, s.keyError(locationKey, err)
	}
	return string(data), locationKey, nil
}

func (s clientSecurity) keyError(key string, err error) error {
	if line, ok := s.lines[key]; ok {
		return errors.Wrapf(err, "%s:%d: %s", s.name, line, key)
	}
	return errors.Wrapf(err, "%s: %s", s.name, key)
}

// certPool parses every CERTIFICATE of a PEM truststore. Unlike x509.CertPool.AppendCertsFromPEM
// it reports a certificate it cannot parse instead of skipping it.
func certPool(text string) (*x509.CertPool, error) {
	blocks, err := decodePEM(text)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	n := 0
	for i, b := range blocks {
		if b.Type != "CERTIFICATE" {
			return nil, errors.Newf("PEM block %d is a %s; a truststore holds only CERTIFICATE blocks", i+1, b.Type)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, errors.Wrapf(err, "certificate %d", i+1)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, errors.New("no PEM certificate found")
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
	return errors.WithHint(errors.New("the private key is encrypted, which kcleanup does not support"),
		"decrypt it (openssl pkey -in key.pem -out key-plain.pem) and keep the file private (chmod 600)")
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
