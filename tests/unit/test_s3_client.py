"""psjob's S3 client without a server: SigV4 against AWS's published example, URIs, addressing.

The requests themselves are tested against a real S3 API server in
tests/component/test_checkpoint_s3.py; this checks what a permissive test server
cannot: that the signature is the one AWS computes.
"""
import datetime as dt

import pytest

from psjob.foundation.checkpoint import s3client
from psjob.foundation.checkpoint.storage import StorageError
from psjob.foundation.settings import Settings, SettingsError

AWS_EXAMPLE = s3client.Keys("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_the_signature_of_aws_s3_get_object_example_is_the_one_aws_publishes():
    # "Example: GET Object", Signature Version 4 header-based authentication, Amazon S3 API reference.
    headers = s3client.sign(AWS_EXAMPLE, "us-east-1", "GET", "examplebucket.s3.amazonaws.com", "/test.txt", {},
                            {"Range": "bytes=0-9"}, dt.datetime(2013, 5, 24, tzinfo=dt.UTC),
                            payload_hash=EMPTY_SHA256)
    assert headers["authorization"] == (
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")


def test_requests_are_signed_unsigned_payload_and_carry_a_session_token_when_given():
    headers = s3client.sign(s3client.Keys("AK", "SK", "TOKEN"), "eu-west-1", "PUT", "b.s3.eu-west-1.amazonaws.com", "/k", {"partNumber": "1"}, {},
                            dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    assert headers["x-amz-content-sha256"] == "UNSIGNED-PAYLOAD" and headers["x-amz-security-token"] == "TOKEN"
    assert "/20260101/eu-west-1/s3/aws4_request" in headers["authorization"]
    assert "x-amz-security-token" in headers["authorization"].split("SignedHeaders=")[1]


def test_uris_parse_to_bucket_and_normalized_key_or_are_refused_naming_the_problem():
    assert s3client.parse("s3://ckpt/jobs//ctr/") == ("ckpt", "jobs/ctr")
    assert s3client.parse("s3://ckpt") == ("ckpt", "")
    for uri, problem in [("s3:///x", "names no bucket"), ("s3://UPPER/x", "not a valid bucket name"),
                         ("s3://ab/x", "not a valid bucket name"), ("s3://ckpt/../x", "must not climb out")]:
        with pytest.raises(StorageError, match=problem):
            s3client.parse(uri)


def test_a_custom_endpoint_addresses_buckets_by_path_and_aws_by_virtual_host():
    minio = s3client.Config.of(Settings({"AWS_ENDPOINT_URL": "http://minio.storage:9000/", "AWS_ACCESS_KEY_ID": "a",
                                      "AWS_SECRET_ACCESS_KEY": "b"}).s3)
    assert minio.location("ckpt") == ("http", "minio.storage:9000", "/ckpt") and minio.region == "us-east-1"
    aws = s3client.Config.of(Settings({"AWS_DEFAULT_REGION": "eu-central-1"}).s3)
    assert aws.location("ckpt") == ("https", "ckpt.s3.eu-central-1.amazonaws.com", "")
    assert aws.location("my.dotted.bucket") == ("https", "s3.eu-central-1.amazonaws.com", "/my.dotted.bucket")
    with pytest.raises(SettingsError, match="not an http:// or https:// URL"):
        Settings({"AWS_ENDPOINT_URL": "minio:9000"}).s3
