package api_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"funnelchat/models"
)

func TestAuthentication(t *testing.T) {
	srv := startServer(t)
	_, key := newAccount(t)
	url := srv.URL + "/v1/lists"

	accepted := map[string]func() response{
		"x-api-key header":       func() response { return do(t, "GET", url, key, nil) },
		"Authorization: Bearer":  func() response { return do(t, "GET", url, "", nil, "Authorization: Bearer "+key) },
		"lower-case bearer":      func() response { return do(t, "GET", url, "", nil, "Authorization: bearer "+key) },
		"apiKey query parameter": func() response { return do(t, "GET", url+"?apiKey="+key, "", nil) },
	}
	for name, call := range accepted {
		t.Run(name, func(t *testing.T) { expect(t, call(), http.StatusOK, "") })
	}
	refused := map[string]func() response{
		"no key":                func() response { return do(t, "GET", url, "", nil) },
		"wrong key":             func() response { return do(t, "GET", url, "sk_wrong", nil) },
		"key with a typo":       func() response { return do(t, "GET", url, key[:len(key)-1]+"x", nil) },
		"empty bearer":          func() response { return do(t, "GET", url, "", nil, "Authorization: Bearer ") },
		"basic auth":            func() response { return do(t, "GET", url, "", nil, "Authorization: Basic "+key) },
		"empty query parameter": func() response { return do(t, "GET", url+"?apiKey=", "", nil) },
		"overlong key":          func() response { return do(t, "GET", url, strings.Repeat("k", 5000), nil) },
		"POST without key": func() response {
			return do(t, "POST", srv.URL+"/v1/contacts", "", map[string]any{"phone": "+14155550100"})
		},
		"contact lookup no key":  func() response { return do(t, "GET", srv.URL+"/v1/contacts?email=a@b.co", "", nil) },
		"rotation with bad key":  func() response { return do(t, "POST", srv.URL+"/v1/api_key", "sk_nope", nil) },
		"list add without a key": func() response { return do(t, "POST", url+"/lst_x/contacts", "", map[string]any{"contactId": "ct_x"}) },
	}
	for name, call := range refused {
		t.Run("refuses "+name, func(t *testing.T) { expect(t, call(), http.StatusUnauthorized, models.CodeUnauthorized) })
	}
}

func TestKeyRotationTakesEffectAtOnceInEveryProcess(t *testing.T) {
	// Two api servers on one database stand for two api processes.
	a, b := startServer(t), startServer(t)
	_, oldKey := newAccount(t)
	expect(t, do(t, "GET", b.URL+"/v1/lists", oldKey, nil), http.StatusOK, "")

	r := do(t, "POST", a.URL+"/v1/api_key", oldKey, nil)
	expect(t, r, http.StatusCreated, "")
	newKey, _ := r.JSON(t)["apiKey"].(string)
	if !strings.HasPrefix(newKey, "sk_") || len(newKey) < 40 || newKey == oldKey {
		t.Fatalf("bad new key %q", newKey)
	}
	for _, s := range []*server{a, b} {
		expect(t, do(t, "GET", s.URL+"/v1/lists", oldKey, nil), http.StatusUnauthorized, models.CodeUnauthorized)
		expect(t, do(t, "GET", s.URL+"/v1/lists", newKey, nil), http.StatusOK, "")
	}
	// Data made with the old key stays with the account.
	expect(t, do(t, "POST", a.URL+"/v1/contacts", newKey, map[string]any{"phone": "+14155550177"}), http.StatusCreated, "")
}

func TestUnknownPathsAndMethods(t *testing.T) {
	srv := startServer(t)
	_, key := newAccount(t)
	expect(t, do(t, "GET", srv.URL+"/v1/no_such_thing", key, nil), 404, models.CodeNotFound)
	expect(t, do(t, "GET", srv.URL+"/v1/no_such_thing", "", nil), 404, models.CodeNotFound)
	expect(t, do(t, "GET", srv.URL+"/contacts", key, nil), 404, models.CodeNotFound)
	// The method is checked before the key.
	expect(t, do(t, "DELETE", srv.URL+"/v1/contacts", "", nil), 405, "METHOD_NOT_ALLOWED")
	expect(t, do(t, "PUT", srv.URL+"/v1/lists", key, map[string]any{}), 405, "METHOD_NOT_ALLOWED")
}

func TestRequestID(t *testing.T) {
	srv := startServer(t)
	r := do(t, "GET", srv.URL+"/healthz", "", nil)
	if len(r.Header.Get("X-Request-Id")) < 16 {
		t.Fatalf("no generated request id: %v", r.Header)
	}
	r = do(t, "GET", srv.URL+"/healthz", "", nil, "X-Request-Id: trace-abc.123")
	if got := r.Header.Get("X-Request-Id"); got != "trace-abc.123" {
		t.Fatalf("client request id not echoed: %q", got)
	}
	r = do(t, "GET", srv.URL+"/healthz", "", nil, "X-Request-Id: evil value;<script>")
	if got := r.Header.Get("X-Request-Id"); got == "" || strings.ContainsAny(got, " ;<") {
		t.Fatalf("unsafe request id echoed: %q", got)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	srv := startServer(t, "REQUIRE_HTTPS=true")
	// Probes answer over plain HTTP even when HTTPS is required.
	r := do(t, "GET", srv.URL+"/healthz", "", nil)
	expect(t, r, http.StatusOK, "")
	r = do(t, "GET", srv.URL+"/readyz", "", nil)
	expect(t, r, http.StatusOK, "")
	checks, _ := r.JSON(t)["checks"].(map[string]any)
	if checks["database"] != "ok" || checks["redis"] != "ok" {
		t.Fatalf("readiness: %s", r.Body)
	}
}

func TestHTTPSRequired(t *testing.T) {
	_, key := newAccount(t)
	t.Run("plain HTTP is refused before anything else", func(t *testing.T) {
		srv := startServer(t, "REQUIRE_HTTPS=true")
		expect(t, do(t, "GET", srv.URL+"/v1/lists", key, nil), 403, "HTTPS_REQUIRED")
		expect(t, do(t, "GET", srv.URL+"/v1/lists", "", nil), 403, "HTTPS_REQUIRED")
		expect(t, do(t, "GET", srv.URL+"/v1/nope", "", nil), 403, "HTTPS_REQUIRED")
		// Without TRUST_PROXY a client cannot claim HTTPS with a header.
		expect(t, do(t, "GET", srv.URL+"/v1/lists", key, nil, "X-Forwarded-Proto: https"), 403, "HTTPS_REQUIRED")
	})
	t.Run("behind a trusted proxy X-Forwarded-Proto counts", func(t *testing.T) {
		srv := startServer(t, "REQUIRE_HTTPS=true", "TRUST_PROXY=true")
		expect(t, do(t, "GET", srv.URL+"/v1/lists", key, nil, "X-Forwarded-Proto: https"), 200, "")
		expect(t, do(t, "GET", srv.URL+"/v1/lists", key, nil, "X-Forwarded-Proto: http"), 403, "HTTPS_REQUIRED")
		expect(t, do(t, "GET", srv.URL+"/v1/lists", key, nil), 403, "HTTPS_REQUIRED")
		// The proxy's own value is the last one; a client-supplied value before it does not count.
		expect(t, do(t, "GET", srv.URL+"/v1/lists", key, nil, "X-Forwarded-Proto: https, http"), 403, "HTTPS_REQUIRED")
	})
	t.Run("the server terminates TLS itself", func(t *testing.T) {
		certFile, keyFile, pool := selfSignedCert(t)
		srv := startServer(t, "REQUIRE_HTTPS=true", "TLS_CERT_FILE="+certFile, "TLS_KEY_FILE="+keyFile)
		if !strings.HasPrefix(srv.URL, "https://") {
			t.Fatalf("server URL %s", srv.URL)
		}
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		req, _ := http.NewRequest("GET", srv.URL+"/v1/lists", nil)
		req.Header.Set("x-api-key", key)
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r, err := readChecked(t, req, res)
		client.CloseIdleConnections()
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != http.StatusOK {
			t.Fatalf("over TLS: status %d", r.Status)
		}
	})
}

// selfSignedCert writes a certificate for 127.0.0.1 and its key, and returns a pool that trusts it.
func selfSignedCert(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
