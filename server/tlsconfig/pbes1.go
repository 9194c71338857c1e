package tlsconfig

import (
	"crypto/cipher"
	"crypto/des"
	"crypto/md5"
	"crypto/sha1"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"math/big"
	"unicode/utf16"
)

// Java reads an encrypted PKCS#8 key with the algorithms of its own
// providers: on Java 17, ZooKeeper's PemReader opens PBES1 keys
// (PBEWithSHA1AndDESede, PBEWithMD5AndDES) and fails on the PBES2 ones
// OpenSSL 3 writes by default ("PBES2 SecretKeyFactory not available"). So
// the keys of working ZooKeeper PEM stores are PBES1, which no maintained
// Go library decrypts outside a PKCS12 file: this file does, for those two.
// PBES2 keys go to github.com/youmark/pkcs8.

var (
	oidPBEWithSHAAnd3KeyTripleDESCBC = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 1, 3}
	oidPBEWithMD5AndDESCBC           = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 3}
)

// encryptedPrivateKeyInfo is PKCS#8's EncryptedPrivateKeyInfo.
type encryptedPrivateKeyInfo struct {
	Algorithm     pkix.AlgorithmIdentifier
	EncryptedData []byte
}

// pbeParams are the parameters of PBES1 and of PKCS#12's PBE schemes.
type pbeParams struct {
	Salt       []byte
	Iterations int
}

// decryptPBES1 returns the PKCS#8 key inside an EncryptedPrivateKeyInfo
// encrypted with one of the PBES1 schemes above; ok is false for another
// scheme.
func decryptPBES1(der []byte, password string) (key []byte, ok bool, err error) {
	var info encryptedPrivateKeyInfo
	if rest, err := asn1.Unmarshal(der, &info); err != nil || len(rest) > 0 {
		return nil, false, nil
	}
	alg := info.Algorithm.Algorithm
	if !alg.Equal(oidPBEWithSHAAnd3KeyTripleDESCBC) && !alg.Equal(oidPBEWithMD5AndDESCBC) {
		return nil, false, nil
	}
	var params pbeParams
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, true, fmt.Errorf("PBE parameters: %w", err)
	}
	// An attacker's file must not make the server spin.
	if params.Iterations < 1 || params.Iterations > 10_000_000 {
		return nil, true, fmt.Errorf("PBE iteration count %d out of range", params.Iterations)
	}
	var block cipher.Block
	var iv []byte
	if alg.Equal(oidPBEWithSHAAnd3KeyTripleDESCBC) {
		pw := bmpString(password)
		k := pkcs12KDF(params.Salt, pw, params.Iterations, 1, 24)
		iv = pkcs12KDF(params.Salt, pw, params.Iterations, 2, 8)
		block, err = des.NewTripleDESCipher(k)
	} else {
		dk := pbkdf1MD5([]byte(password), params.Salt, params.Iterations)
		iv = dk[8:]
		block, err = des.NewCipher(dk[:8])
	}
	if err != nil {
		return nil, true, err
	}
	data := info.EncryptedData
	if len(data) == 0 || len(data)%block.BlockSize() != 0 {
		return nil, true, errors.New("encrypted key is not a whole number of blocks")
	}
	out := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, data)
	n := int(out[len(out)-1])
	if n == 0 || n > block.BlockSize() || n > len(out) {
		return nil, true, errors.New("decrypt the private key: wrong password?")
	}
	for _, b := range out[len(out)-n:] {
		if int(b) != n {
			return nil, true, errors.New("decrypt the private key: wrong password?")
		}
	}
	return out[:len(out)-n], true, nil
}

// bmpString is a password as PKCS#12 derives keys from it: UTF-16
// big-endian, ending in a zero character.
func bmpString(s string) []byte {
	var b []byte
	for _, r := range utf16.Encode([]rune(s)) {
		b = append(b, byte(r>>8), byte(r))
	}
	return append(b, 0, 0)
}

// pkcs12KDF is the key derivation of RFC 7292, appendix B.2, with SHA-1:
// id 1 derives a key, 2 an IV.
func pkcs12KDF(salt, password []byte, iterations int, id byte, size int) []byte {
	const v = 64 // SHA-1's block size
	fill := func(b []byte) []byte {
		if len(b) == 0 {
			return nil
		}
		out := make([]byte, v*((len(b)+v-1)/v))
		for i := range out {
			out[i] = b[i%len(b)]
		}
		return out
	}
	d := make([]byte, v)
	for i := range d {
		d[i] = id
	}
	I := append(fill(salt), fill(password)...)
	var out []byte
	one := big.NewInt(1)
	for len(out) < size {
		h := sha1.New()
		h.Write(d)
		h.Write(I)
		a := h.Sum(nil)
		for range iterations - 1 {
			s := sha1.Sum(a)
			a = s[:]
		}
		out = append(out, a...)
		if len(out) >= size {
			break
		}
		// Each v-byte block of I becomes I_j + B + 1, modulo 2^(8v),
		// where B is a repeated to v bytes.
		bb := new(big.Int).SetBytes(fill(a)[:v])
		for j := 0; j < len(I); j += v {
			x := new(big.Int).SetBytes(I[j : j+v])
			x.Add(x, bb).Add(x, one)
			xb := x.Bytes()
			if len(xb) > v {
				xb = xb[len(xb)-v:]
			}
			block := I[j : j+v]
			clear(block)
			copy(block[v-len(xb):], xb)
		}
	}
	return out[:size]
}

// pbkdf1MD5 is PKCS#5's PBKDF1 with MD5, giving 16 bytes: a DES key and
// its IV.
func pbkdf1MD5(password, salt []byte, iterations int) []byte {
	h := md5.New()
	h.Write(password)
	h.Write(salt)
	dk := h.Sum(nil)
	for range iterations - 1 {
		s := md5.Sum(dk)
		dk = s[:]
	}
	return dk
}
