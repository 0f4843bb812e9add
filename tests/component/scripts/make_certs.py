"""Write a throwaway CA and a pserver certificate it signed, for TLS tests and local tries.

    python make_certs.py DIR [--name NAME ...]

DIR receives ca.crt, tls.crt and tls.key (the names a Kubernetes TLS Secret
mounts). The server certificate covers localhost and 127.0.0.1–127.0.0.8 (the
loopback addresses `psjob launch` gives its pservers) plus every --name. Keys
are EC P-256 and the certificates valid for a day: for tests only.
"""
import argparse
import datetime
import ipaddress
import os

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _name(cn):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _pem(cert):
    return cert.public_bytes(serialization.Encoding.PEM)


def make_certs(out_dir, names=(), ca_name="psjob test CA"):
    """Write ca.crt, tls.crt, tls.key under out_dir; returns their paths (ca, cert, key)."""
    os.makedirs(out_dir, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=1)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name(ca_name)).issuer_name(_name(ca_name))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(start).not_valid_after(end)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    sans = [x509.DNSName("localhost"), *(x509.DNSName(n) for n in names)]
    sans += [x509.IPAddress(ipaddress.ip_address(f"127.0.0.{i}")) for i in range(1, 9)]
    cert = (x509.CertificateBuilder().subject_name(_name("psjob-pserver")).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = tuple(os.path.join(out_dir, n) for n in ("ca.crt", "tls.crt", "tls.key"))
    with open(paths[0], "wb") as f:
        f.write(_pem(ca))
    with open(paths[1], "wb") as f:
        f.write(_pem(cert))
    with open(paths[2], "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    os.chmod(paths[2], 0o600)
    return paths


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out_dir")
    p.add_argument("--name", action="append", default=[], help="extra DNS name for the pserver certificate")
    a = p.parse_args()
    for path in make_certs(a.out_dir, a.name):
        print(path)
