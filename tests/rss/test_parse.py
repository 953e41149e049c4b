"""mailroom.rss.parse on feeds shaped as blog engines write them (tests/rss/fixtures):
WordPress's RSS 2.0 (content:encoded, dc:creator, guid isPermaLink="false", an audio enclosure
beside a media:content image), a jekyll-feed Atom feed (xml:base on content, HTML titles,
media:thumbnail) and an RSS 1.0 (RDF) feed; then garbage, ordering and the sanitiser itself."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urljoin

import pytest

from mailroom.rss.fetch import FeedUnreadable
from mailroom.rss.parse import FeedItem, html_to_text, parse_feed, sanitise

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def rss(items: str, *, head: str = "<title>Inline</title><link>https://b.example/</link>") -> bytes:
    return (
        '<?xml version="1.0" encoding="UTF-8"?><rss version="2.0" '
        'xmlns:content="http://purl.org/rss/1.0/modules/content/"><channel>'
        f"{head}{items}</channel></rss>"
    ).encode()


# --- WordPress RSS 2.0 ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def wordpress():
    return parse_feed(fixture("wordpress-rss2.xml"), "https://garden.example.com/feed/")


def test_wordpress_feed_and_items(wordpress):
    assert wordpress.title == "Field Notes \u2013 A Small Garden"
    assert wordpress.link == "https://garden.example.com"
    # The fourth item has neither guid nor link: dropped.
    assert [(i.guid, i.title, i.link, i.published_at, i.author) for i in wordpress.items] == [
        (
            "https://garden.example.com/?p=412",
            "Tomatoes & the first frost",
            "https://garden.example.com/2024/05/tomatoes-first-frost/",
            datetime(2024, 5, 14, 9, 12, 31, tzinfo=UTC),
            "Ana Souza",
        ),
        (
            "https://garden.example.com/?p=405",
            "Seed swap this Saturday",
            "https://garden.example.com/2024/05/seed-swap/",
            datetime(2024, 5, 10, 15, 30, tzinfo=UTC),  # 17:30 +0200
            "Ana Souza",
        ),
        (
            "https://garden.example.com/?p=398",
            "Why we compost",
            "https://garden.example.com/2024/04/why-we-compost/",
            datetime(2024, 4, 29, 6, 0, tzinfo=UTC),
            "Ben Okafor",
        ),
    ]
    assert all(i.published_at.tzinfo is UTC for i in wordpress.items)


def test_wordpress_summary_is_the_description_as_plain_text(wordpress):
    assert wordpress.items[0].summary == (
        "Frost came early this year. The tomatoes survived under fleece \u2013 here is how. "
        "Read on [\u2026] The post Tomatoes & the first frost appeared first on Field Notes."
    )
    assert wordpress.items[2].summary == "Kitchen scraps become next year's soil."


def test_wordpress_content_is_sanitised(wordpress):
    content = wordpress.items[0].content
    for gone in (
        "<script",
        "document.cookie",
        "onclick",
        "onmouseover",
        "steal()",
        "<iframe",
        "youtube",
        "<style",
        "display:none",
        "javascript:",
        "class=",
        "style=",
        "decoding=",
        "<!--",
    ):
        assert gone not in content, gone
    assert "<strong>fleece</strong>" in content
    # The root-relative link, resolved against the item's link, with rel added.
    assert (
        '<a href="https://garden.example.com/2023/10/fleece-buying-guide/"'
        ' rel="noopener noreferrer">here is how</a>'
    ) in content
    assert (
        '<figure><img alt="Tomato plants under fleece" height="683" '
        'src="https://garden.example.com/wp-content/uploads/2024/05/frost-1024x683.jpg" '
        'width="1024"><figcaption>Under fleece</figcaption></figure>'
    ) in content
    assert "Click me" in content  # the text of the javascript: link stays, the URL does not


def test_wordpress_images(wordpress):
    tomatoes, seeds, compost = wordpress.items
    # media:content image, not the audio enclosure before it
    assert tomatoes.image == "https://garden.example.com/wp-content/uploads/2024/05/frost-hero.jpg"
    assert seeds.image == "https://garden.example.com/wp-content/uploads/2024/05/seed-swap.png"
    # No enclosure or media: the first <img> of the content, made absolute.
    assert compost.image == "https://garden.example.com/wp-content/uploads/2024/04/compost-bin.jpg"
    assert "onerror" not in compost.content


def test_page_relative_urls_resolve_against_the_items_link(wordpress):
    seeds = wordpress.items[1]
    assert (
        '<img alt="Seeds on a table" '
        'src="https://garden.example.com/2024/05/seed-swap/seed-table.jpg">'
    ) in seeds.content


# --- Atom ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def atom():
    return parse_feed(fixture("jekyll-atom.xml"), "https://jane.example.net/feed.xml")


def test_atom_feed_and_entries(atom):
    assert atom.title == "Jane\u2019s Notes"
    assert atom.link == "https://jane.example.net/"
    reviews, hello = atom.items
    assert reviews.guid == "https://jane.example.net/2024/05/14/code-reviews"
    assert reviews.title == "Tips & tricks for <code> reviews"  # type="html" title, as text
    assert reviews.link == "https://jane.example.net/2024/05/14/code-reviews.html"
    # <published> wins over <updated>; 10:00+02:00 is 08:00 UTC.
    assert reviews.published_at == datetime(2024, 5, 14, 8, 0, tzinfo=UTC)
    assert reviews.author == "Jane Doe"
    assert reviews.summary == "Reviews go better when they are small."
    assert hello.guid == "tag:jane.example.net,2024-03-01:/hello"
    assert hello.title == "Hello, Atom"
    assert hello.link == "https://jane.example.net/2024/03/01/hello.html"  # rel="alternate"
    assert hello.published_at == datetime(2024, 3, 1, 8, 15, tzinfo=UTC)  # only <updated>
    assert hello.summary == "First post on the new site."  # no <summary>: from the content
    assert hello.content == "<p>First post on the new site.</p>"
    assert hello.image == "https://jane.example.net/assets/hello-thumb.jpg"  # media:thumbnail


def test_atom_content_is_sanitised_against_its_xml_base(atom):
    content = atom.items[0].content
    assert "<em>small</em>" in content
    assert (
        '<a href="https://jane.example.net/2024/05/14/checklist.html" '
        'rel="noopener noreferrer">my checklist</a>'
    ) in content
    assert '<img alt="A review" src="https://jane.example.net/assets/review.png">' in content
    assert "<pre><code>git diff --stat</code></pre>" in content
    assert "<iframe" not in content and "evil.example" not in content
    assert "onerror" not in content and "alert" not in content
    assert atom.items[0].image == "https://jane.example.net/assets/review.png"


# --- RSS 1.0 ---------------------------------------------------------------------------------


def test_rss_1_0(tmp_path):
    feed = parse_feed(fixture("rss1-rdf.xml"), "https://news.example.org/rss")
    assert (feed.title, feed.link) == ("Example Town News", "https://news.example.org/")
    assert feed.items == [
        FeedItem(
            guid="https://news.example.org/notices/bridge-closure",
            title="Bridge closed for repairs",
            link="https://news.example.org/notices/bridge-closure",
            published_at=datetime(2024, 5, 12, 9, 0, tzinfo=UTC),
            summary="The old bridge is closed from 13 May to 24 May.",
            content="The old bridge is closed from 13 May to 24 May.",
            author="Town Clerk",
            image=None,
        ),
        FeedItem(
            guid="https://news.example.org/notices/library-hours",
            title="Library opening hours",
            link="https://news.example.org/notices/library-hours",
            published_at=datetime(2024, 5, 9, 13, 30, tzinfo=UTC),  # 14:30 +01:00
            summary="New summer hours start in June.",
            content="New <b>summer</b> hours start in June.",
            author=None,
            image=None,
        ),
    ]


# --- not feeds -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"<html>not a feed</html>",
        b"<!DOCTYPE html><html><head><title>Blog</title></head><body><p>Hi</p></body></html>",
        b"",
        b'{"items": []}',
        b"/etc/passwd",  # a body that is a path is not a file to open
        str(FIXTURES / "rss1-rdf.xml").encode(),  # nor a feed's own path
        b"\x00\xff\xfe garbage",
    ],
)
def test_garbage_is_not_a_feed(body):
    with pytest.raises(FeedUnreadable, match=r"^not a feed$"):
        parse_feed(body, "https://b.example/feed")


def test_a_feed_with_no_items_is_a_feed():
    feed = parse_feed(rss(""), "https://b.example/feed")
    assert (feed.title, feed.link, feed.items) == ("Inline", "https://b.example/", [])


# --- items -----------------------------------------------------------------------------------


def test_items_are_newest_first_when_all_are_dated():
    body = rss(
        "<item><guid>a</guid><title>Old</title><pubDate>Mon, 01 Apr 2024 10:00:00 GMT</pubDate></item>"
        "<item><guid>b</guid><title>New</title><pubDate>Wed, 01 May 2024 10:00:00 GMT</pubDate></item>"
        "<item><guid>c</guid><title>Mid</title><pubDate>Wed, 10 Apr 2024 10:00:00 GMT</pubDate></item>"
    )
    assert [i.guid for i in parse_feed(body, "https://b.example/feed").items] == ["b", "c", "a"]


def test_feed_order_is_kept_when_an_item_has_no_date():
    body = rss(
        "<item><guid>a</guid><pubDate>Mon, 01 Apr 2024 10:00:00 GMT</pubDate></item>"
        "<item><guid>b</guid></item>"
        "<item><guid>c</guid><pubDate>Wed, 01 May 2024 10:00:00 GMT</pubDate></item>"
    )
    items = parse_feed(body, "https://b.example/feed").items
    assert [(i.guid, i.published_at) for i in items] == [
        ("a", datetime(2024, 4, 1, 10, 0, tzinfo=UTC)),
        ("b", None),
        ("c", datetime(2024, 5, 1, 10, 0, tzinfo=UTC)),
    ]


def test_guids_are_kept_as_written_and_deduplicated():
    body = rss(
        "<item><guid>  post-7  </guid><title>First</title></item>"
        "<item><guid>post-7</guid><title>Repeated</title></item>"
        "<item><title>By link</title><link>/2024/05/by-link/</link></item>"
        "<item><title>Unsafe link</title><guid isPermaLink='false'>x-1</guid>"
        "<link>javascript:alert(1)</link></item>"
    )
    for url in ("https://b.example/feed", "https://mirror.example.org/other/feed"):
        items = parse_feed(body, url).items
        assert [i.title for i in items] == ["First", "By link", "Unsafe link"]
        # A guid is not resolved against the URL the feed came from: a moved feed keeps them.
        assert (items[0].guid, items[2].guid) == ("post-7", "x-1")
        # No guid: the link, made absolute.
        assert items[1].guid == items[1].link == urljoin(url, "/2024/05/by-link/")
        assert items[2].link is None  # only http(s) links


def test_the_declared_encoding_is_used():
    body = (
        '<?xml version="1.0" encoding="ISO-8859-1"?><rss version="2.0"><channel>'
        "<title>Caf\xe9 du Jardin</title><item><guid>1</guid><title>Ol\xe1, cora\xe7\xe3o</title>"
        "<description>p\xe3o &amp; caf\xe9</description></item></channel></rss>"
    ).encode("latin-1")
    feed = parse_feed(body, "https://b.example/feed")
    assert feed.title == "Caf\u00e9 du Jardin"
    assert (feed.items[0].title, feed.items[0].summary) == (
        "Ol\u00e1, cora\u00e7\u00e3o",
        "p\u00e3o & caf\u00e9",
    )


def test_a_long_summary_is_cut_on_a_word():
    words = " ".join(f"word{n}" for n in range(200))  # about 1,400 characters
    body = rss(f"<item><guid>1</guid><description><![CDATA[<p>{words}</p>]]></description></item>")
    summary = parse_feed(body, "https://b.example/feed").items[0].summary
    assert len(summary) <= 500
    assert summary.endswith("\u2026")
    assert words.startswith(summary[:-1])
    assert summary[:-1].split()[-1] in words.split()  # a whole word before the ellipsis


def test_plain_text_content_is_escaped_not_interpreted():
    body = (
        b'<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>T</title>'
        b"<entry><id>urn:1</id><title>x</title><updated>2024-05-01T00:00:00Z</updated>"
        b'<content type="text">1 &lt; 2\nand &lt;b&gt;not bold&lt;/b&gt;</content></entry></feed>'
    )
    item = parse_feed(body, "https://b.example/feed").items[0]
    assert item.content == "1 &lt; 2<br>\nand &lt;b&gt;not bold&lt;/b&gt;"
    assert item.summary == "1 < 2 and <b>not bold</b>"  # plain text: the template escapes it


# --- the sanitiser ---------------------------------------------------------------------------


def test_sanitise_keeps_the_email_allow_list():
    kept = (
        "<h1>a</h1><h6>b</h6><p>c<br>d</p><blockquote>e</blockquote><ul><li>f</li></ul>"
        "<ol><li>g</li></ol><b>h</b><i>i</i><u>j</u><em>k</em><strong>l</strong><hr>"
        "<pre><code>m</code></pre>"
        '<table><thead><tr><th colspan="2">n</th></tr></thead>'
        '<tbody><tr><td rowspan="1">o</td></tr></tbody></table>'
        '<figure><img alt="p" height="1" src="https://a.example/p.png" title="q" width="2">'
        "<figcaption>r</figcaption></figure>"
    )
    assert sanitise(kept, "https://a.example/") == kept
    assert sanitise('<a href="https://a.example/x" title="t">s</a>') == (
        '<a href="https://a.example/x" title="t" rel="noopener noreferrer">s</a>'
    )
    assert sanitise('<a href="mailto:hi@a.example">m</a>') == (
        '<a href="mailto:hi@a.example" rel="noopener noreferrer">m</a>'
    )


@pytest.mark.parametrize(
    ("dirty", "clean"),
    [
        ("<script>alert(1)</script>ok", "ok"),
        ("<style>p{color:red}</style>ok", "ok"),
        ('<iframe src="https://evil.example/">fallback</iframe>ok', "ok"),
        ("<svg><script>alert(1)</script></svg>ok", "ok"),
        ('<p onclick="x()" style="color:red" class="c" id="i">ok</p>', "<p>ok</p>"),
        ('<img src="x.png" onerror="alert(1)">', '<img src="https://a.example/post/x.png">'),
        ('<a href="javascript:alert(1)">x</a>', '<a rel="noopener noreferrer">x</a>'),
        ('<a href=" JaVa&#09;ScRiPt:alert(1)">x</a>', '<a rel="noopener noreferrer">x</a>'),
        ('<img src="data:image/png;base64,AAAA">', "<img>"),
        ('<a href="ftp://a.example/f">x</a>', '<a rel="noopener noreferrer">x</a>'),
        ('<a href="https://a.example/" target="_blank" rel="opener">x</a>',
         '<a href="https://a.example/" rel="noopener noreferrer">x</a>'),
        ('<form action="https://evil.example/"><input name="pw"></form>ok', "ok"),
        ("<div><span>kept text</span></div>", "kept text"),
        ("<!-- comment -->ok", "ok"),
        ('<noscript><img src="https://a.example/lazy.jpg"></noscript>',
         '<img src="https://a.example/lazy.jpg">'),
    ],
)  # fmt: skip
def test_sanitise_removes(dirty, clean):
    assert sanitise(dirty, "https://a.example/post/") == clean


def test_sanitise_resolves_relative_urls_against_the_base():
    html = '<a href="/about">a</a><a href="next.html#top">n</a><img src="//cdn.example/i.png">'
    assert sanitise(html, "https://a.example/2024/post/") == (
        '<a href="https://a.example/about" rel="noopener noreferrer">a</a>'
        '<a href="https://a.example/2024/post/next.html#top" rel="noopener noreferrer">n</a>'
        '<img src="https://cdn.example/i.png">'
    )
    # Without a base a relative URL cannot work in an email: removed.
    assert sanitise(html) == (
        '<a rel="noopener noreferrer">a</a><a rel="noopener noreferrer">n</a><img>'
    )
    assert sanitise('<a href="">x</a>', "https://a.example/") == (
        '<a rel="noopener noreferrer">x</a>'
    )


def test_html_to_text():
    assert html_to_text("<p>a</p><p>b &amp; &lt;c&gt;</p><script>x()</script>wo<b>r</b>d") == (
        "a b & <c> word"
    )
