// Command devcerts writes the TLS material of the development broker (cmd/kafkadev/kafka.sh):
// a certificate authority and a broker certificate signed by it, valid for 127.0.0.1 only.
//
//	devcerts DIR
//
// It writes, into DIR:
//
//	ca.pem          the CA certificate (the truststore of clients and of the broker's mTLS listener)
//	ca-key.pem      the CA's private key (PKCS#8), so that tests can sign client certificates
//	broker.pem      the broker's private key (PKCS#8) followed by its certificate chain: a
//	                keystore of type PEM, as Kafka reads it (ssl.keystore.type=PEM)
//
// The broker certificate names only IP 127.0.0.1 (no DNS name): a client that dials
// "localhost" sees a host name mismatch, which the tests rely on. Files are written to a
// temporary name and renamed, so a half-written set is never used. Nothing is downloaded.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: devcerts DIR")
		os.Exit(2)
	}
	if err := write(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "devcerts:", err)
		os.Exit(1)
	}
}

func write(dir string) error {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	ca := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "kcleanup development CA", Organization: []string{"kcleanup"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}

	brokerKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	leaf := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "kcleanup development broker", Organization: []string{"kcleanup"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(10, 0, 0),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &brokerKey.PublicKey, caKey)
	if err != nil {
		return err
	}

	caKeyDER, err := x509.MarshalPKCS8PrivateKey(caKey)
	if err != nil {
		return err
	}
	brokerKeyDER, err := x509.MarshalPKCS8PrivateKey(brokerKey)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"ca.pem":     pemOf("CERTIFICATE", caDER),
		"ca-key.pem": pemOf("PRIVATE KEY", caKeyDER),
		"broker.pem": append(append(pemOf("PRIVATE KEY", brokerKeyDER), pemOf("CERTIFICATE", leafDER)...), pemOf("CERTIFICATE", caDER)...),
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, data := range files {
		tmp := filepath.Join(dir, name+".tmp")
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

func pemOf(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}
