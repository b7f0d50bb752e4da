"""Text primitives: normalisation, language, entities (with surface tokens) and keywords."""

from __future__ import annotations

import re

import pytest

from pipeline.text.lexicon import CONFIRMED
from pipeline.text.primitives import (
    Entity,
    arabic,
    clock_times,
    detect_language,
    entity_values,
    extract_entities,
    find_entities,
    instance_shape,
    keywords,
    normalize,
    shares,
)


def test_normalize_folds_width_case_and_whitespace():
    assert normalize("  Payment\tSERVICE  超时：５３００ｍｓ \n") == "payment service 超时:5300ms"


def test_a_clock_time_after_a_labels_colon_is_a_time_and_seconds_are_not_one():
    assert clock_times("时间顺序：19:31 达到 maxmemory") == {"19:31"}
    assert clock_times("16:20: deployment finished") == {"16:20"}
    assert clock_times("2026-11-26T16:20:48.164Z") == {"16:20"}


def test_detect_language():
    assert detect_language("支付接口超时") == "zh"
    assert detect_language("payment API times out") == "en"


def test_entities_of_each_kind():
    ents = extract_entities(
        "payment-service HTTP 504 E_PAY_TIMEOUT NullPointerException order_id=ord-77 CPU 92.0% latency 5300ms retry 3"
    )
    assert Entity("service", "payment-service") in ents
    assert Entity("http_status", "504") in ents
    assert Entity("error_code", "e_pay_timeout") in ents
    assert Entity("error_code", "nullpointerexception") in ents
    assert Entity("identifier", "ord-77") in ents
    assert Entity("percentage", "92") in ents
    assert Entity("quantity", "5.3s") in ents
    assert Entity("number", "3") in ents


def test_durations_compare_across_units():
    assert extract_entities("5300ms") == extract_entities("5.3s") == extract_entities("5.3 秒")
    assert extract_entities("29.0%") != extract_entities("92.0%")


def test_chinese_identifier():
    assert Entity("identifier", "88120") in extract_entities("订单号：88120 处理失败")


def test_status_class_beside_chinese():
    assert Entity("http_status", "5xx") in extract_entities("5xx比例: 18.0%")
    assert not any(e.kind == "http_status" for e in extract_entities("ax5xx 5xxx"))


def test_find_entities_gives_tokens_and_spans_in_normalized_text():
    text = "CPU 使用率 92.0%，payment-service 超时"
    norm = normalize(text)
    found = find_entities(text)
    assert [(e.kind, e.token) for e in found] == [("percentage", "92.0%"), ("service", "payment-service")]
    for ent in found:
        assert norm[ent.start : ent.end] == ent.token
    assert extract_entities(text) == frozenset(Entity(e.kind, e.value) for e in found)


def test_entity_values_include_unit_free_numbers():
    assert {"5.3s", "5.3"} <= entity_values("latency 5300ms")


def test_keywords_are_chinese_aware_and_drop_stop_words():
    words = keywords("支付接口出现请求超时 in the payment-service")
    assert "支付" in words or "支付接口" in words
    assert "超时" in words
    assert "payment-service" in words
    assert "the" not in words and "出现" not in words


def test_incident_words_stay_whole_where_a_news_word_would_split_them():
    # jieba alone reads "下单超时报错" as 下单/超/时报/错 ("时报": a newspaper)
    assert {"超时", "报错"} <= keywords("下单超时报错了好几次")


def test_confirmed_matches_whole_english_words_only():
    said = ["the root cause is the pool", "confirmed: the pool ran out", "it is definitely the pool", "已确认连接池耗尽"]
    assert all(CONFIRMED.search(normalize(s)) for s in said)
    # Inside a longer word, or denied, it says nothing is established.
    unsaid = ["the queue grew indefinitely", "the pool is unconfirmed", "not confirmed yet", "reconfirmed later",
              "the uproot cause is unknown"]
    assert not [s for s in unsaid if CONFIRMED.search(normalize(s))]


@pytest.mark.parametrize(("text", "instance", "shape"), [
    ("实例: redis-cart-0, 淘汰键数", "redis-cart-0", "ordinal"),
    ("HikariPool-1 - Connection is not available", "hikaripool-1", "ordinal"),
    ("hot thread pay-worker-17 (nid=0x3f2a)", "pay-worker-17", "ordinal"),
    ("pod inv-84cd-2 restarted", "inv-84cd-2", "pod"),
    ("checkout-service-7d9f8-x2k4p OOMKilled", "checkout-service-7d9f8-x2k4p", "pod"),
    ("reset by smtp-relay.internal:587, retry", "smtp-relay.internal:587", "endpoint"),
    ("connect to 10.0.3.7:6379 refused", "10.0.3.7:6379", "endpoint"),
    ("node ip-10-0-3-17.ec2.internal NotReady", "ip-10-0-3-17.ec2.internal", "node"),
])
def test_instances_and_their_shapes(text: str, instance: str, shape: str) -> None:
    assert Entity("instance", instance) in extract_entities(text)
    assert instance_shape(instance) == shape


@pytest.mark.parametrize("text", ["配置变更: cfg-20261121-03", "sku=SKU-148266", "TLS tls-1.2 handshake", "redis-cart"])
def test_ids_versions_and_bare_names_are_no_instances(text: str) -> None:
    assert not any(e.kind == "instance" for e in extract_entities(text))


def test_a_number_beside_a_chinese_word_is_a_number():
    assert Entity("number", "21") in extract_entities("证书即将过期: 21天")
    assert Entity("number", "7") in extract_entities("重试次数7")


def test_a_source_line_or_port_is_a_value_of_its_location():
    assert "142" in entity_values("at PricingClient.applyCoupon(PricingClient.java:142)")


def test_a_full_width_comma_between_digits_ends_a_clause() -> None:
    """A Chinese writer's "PID 1，245 个线程" is PID 1 and 245 threads, not 1245; "1,245" is still one number."""
    assert {e.value for e in extract_entities("java PID 1，245 个线程")} == {"1", "245个"}
    assert {e.value for e in extract_entities("processed 1,245 rows")} >= {"1245"}


@pytest.mark.parametrize(("said", "digits"), [
    ("积压排到八百多了", "积压排到800多了"), ("大概三十来万行", "大概30万左右行"), ("一千二百个", "1200个"),
    ("两万单", "2万单"), ("三百零五", "305"),
    # a lone digit or "十分" (very) is a word, not a figure
    ("第一次一直十分慢", "第一次一直十分慢"),
])
def test_chinese_character_numbers_read_as_digits(said: str, digits: str) -> None:
    assert arabic(said) == digits


@pytest.mark.parametrize(("said", "percent"), [
    ("登录失败率快到四成了", "登录失败率快到40%了"), ("大概一半的请求", "大概50%的请求"),
    ("nearly a third of logins fail", "nearly 33.3% of logins fail"), ("three quarters of the pods", "75% of the pods"),
    ("is it half?", "is it 50%?"),
    # "八成是" is "most likely", "一成不变" "unchanging"; a third pod, half an hour and the second half are no shares
    ("八成是缓存的问题", "八成是缓存的问题"), ("配置一成不变", "配置一成不变"), ("a third pod crashed", "a third pod crashed"),
    ("half an hour later", "half an hour later"), ("in the second half of the window", "in the second half of the window"),
])
def test_a_share_said_in_words_reads_as_a_percentage(said: str, percent: str) -> None:
    text, starts = shares(said)
    assert text == percent
    # each start is where a written percentage begins, the bound readers' mark of a loose figure
    assert len(starts) == text.count("%") and all(re.match(r"\d+(?:\.\d+)?%", text[at:]) for at in starts)
