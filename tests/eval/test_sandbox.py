"""The bounded sandbox user templates render in (`ix.eval.sandbox`): every way to make a large
value, nest calls or loop long that a template has is refused at the limit, quickly, with
a `jinja2.TemplateError` that says which limit; ordinary templates render as in jinja2's
own sandbox."""

import time

import jinja2
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from ix.eval import sandbox

LIMITS = sandbox.Limits(size=10_000, depth=10, seconds=0.5)
TOO_LARGE = "makes a value of more than 10,000 characters"
PRINTS_TOO_MUCH = "renders more than 10,000 characters"
TOO_DEEP = "nests calls more than 10 deep"
TOO_LONG = "takes more than 0.5 s to render"
TOO_MANY_DIGITS = "makes a number of more than 4,300 digits"


def _env(**options):
    return sandbox.environment(LIMITS, immutable=True, undefined=jinja2.StrictUndefined,
                               autoescape=False, **options)


@pytest.mark.parametrize(("source", "said"), [
    ("{{ 'a' * 4000000000 }}", TOO_LARGE),
    ("{{ ['a'] * 4000000000 }}", TOO_LARGE),
    ("{{ 'a'|center(4000000000) }}", TOO_LARGE),
    ("{{ 'a'.ljust(4000000000) }}", TOO_LARGE),
    ("{{ 'a'.zfill(4000000000) }}", TOO_LARGE),
    ("{{ ('\t' * 100).expandtabs(4000000) }}", TOO_LARGE),
    ("{{ '%4000000000d' % 1 }}", TOO_LARGE),
    ("{{ '%*d' % (4000000000, 1) }}", TOO_LARGE),
    ("{{ '%4000000000d'|format(1) }}", TOO_LARGE),
    ("{{ '{:>4000000000}'.format(1) }}", TOO_LARGE),
    ("{{ '{0}{0}{0}{0}{0}{0}{0}{0}{0}{0}{0}{0}'.format(s) }}", TOO_LARGE),
    ("{{ ('a' * 1000)|replace('a', 'b' * 1000) }}", TOO_LARGE),
    ("{{ ('a' * 1000).replace('a', 'b' * 1000) }}", TOO_LARGE),
    ("{{ [s, s, s, s, s, s, s, s, s, s, s, s]|join }}", TOO_LARGE),
    ("{{ ''.join([s, s, s, s, s, s, s, s, s, s, s, s]) }}", TOO_LARGE),
    ("{{ [s, s, s, s, s, s, s, s, s, s, s, s] }}", TOO_LARGE),
    ("{{ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s }}", TOO_LARGE),
    ("{{ s + s + s + s + s + s + s + s + s + s + s + s }}", TOO_LARGE),
    ("{{ ('a\n' * 1000)|indent(1000) }}", TOO_LARGE),
    ("{{ ('a ' * 1000)|wordwrap(1, wrapstring='x' * 1000) }}", TOO_LARGE),
    ("{{ [1]|batch(4000000000, 'x')|list }}", TOO_LARGE),
    ("{{ (1).to_bytes(4000000000, 'big') }}", TOO_LARGE),
    ("{{ lipsum(100000) }}", TOO_LARGE),
    ("{{ ([[1]] * 3000)|sum(start=[]) }}", TOO_LARGE),
    ("{% set ns = namespace(s='a') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
     "{% endfor %}{{ ns.s }}", TOO_LARGE),
    ("{{ 10 ** 100000 }}", TOO_MANY_DIGITS),
    ("{% set ns = namespace(n=3) %}{% for i in range(40) %}{% set ns.n = ns.n * ns.n %}"
     "{% endfor %}{{ ns.n }}", TOO_MANY_DIGITS),
    ("{% for i in range(100000) %}{{ s }}{% endfor %}", PRINTS_TOO_MUCH),
    ("{% macro m() %}{% for i in range(1000) %}{{ s }}{% endfor %}{% endmacro %}{{ m()|length }}",
     PRINTS_TOO_MUCH),
    ("{% set x %}{% for i in range(1000) %}{{ s }}{% endfor %}{% endset %}{{ x|length }}",
     PRINTS_TOO_MUCH),
    ("{% macro again() %}{{ again() }}{% endmacro %}{{ again() }}", TOO_DEEP),
    ("{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}", TOO_DEEP),
    ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
     TOO_LONG),
    ("{% for i in s %}{% for j in s %}{% for k in s %}{% endfor %}{% endfor %}{% endfor %}",
     TOO_LONG),
])
def test_a_template_past_a_limit_is_refused_quickly_saying_which(source, said):
    started = time.monotonic()
    with pytest.raises(jinja2.TemplateError, match=said) as caught:
        _env().from_string(source).render(s="a" * 1000)
    assert isinstance(caught.value, sandbox.limit_error())
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(("source", "parses"), [
    ("{{ " + "(" * 3000 + "1" + ")" * 3000 + " }}", False),  # a RecursionError in jinja2
    ("{% for a in [1] %}" * 25 + "{% endfor %}" * 25, True),  # a SyntaxError in Python's
])
def test_a_template_nested_too_deep_to_compile_is_a_syntax_error(source, parses):
    with pytest.raises(jinja2.TemplateSyntaxError, match="nested too deep to compile"):
        _env().from_string(source)
    if not parses:
        with pytest.raises(jinja2.TemplateSyntaxError, match="nested too deep to compile"):
            _env().parse(source)


@pytest.mark.parametrize("source", [
    "Please {{ verb }} {{ file }} for me.",
    "{% for i in range(3) %}{{ loop.index }}/{{ loop.length }}{% if not loop.last %}, "
    "{% endif %}{% endfor %}",
    "{% macro m(x) %}<{{ x }}>{% endmacro %}{{ m(verb) ~ '!' }} {{ caller is defined }}",
    "{{ '%s-%03d' % (verb, 7) }} {{ '{}:{:>6}'.format(verb, 2) }} {{ '%(v)s'|format(v=1) }}",
    "{{ [3, 1, 2]|sort|join(',') }} {{ verb|center(11) }}|{{ verb|upper|replace('E', '3') }}",
    "{{ 2 ** 10 }} {{ 'ab' * 3 }} {{ [1] + [2] }} {{ 7 // 2 }} {{ -3 }} {{ 1.5 * 2 }}",
    "{% set x %}{{ verb }}{% endset %}{{ x|wordwrap(3) }} {{ 'a\tb'.expandtabs(4) }}",
    "{{ {'a': 1}|dictsort }} {{ ([[1], [2]])|sum(start=[]) }} {{ [1, 2]|batch(1)|list }}",
    "{% for x in tree recursive %}{{ x.n }}{% if x.kids %}({{ loop(x.kids) }}){% endif %}"
    "{% endfor %}",
    "{% filter upper %}{{ file }}{% endfilter %} {{ file|indent(2, true) }}",
])
def test_an_ordinary_template_renders_as_in_jinjas_own_sandbox(source):
    given = {"verb": "verbe", "file": "a.csv\nb.csv",
             "tree": [{"n": 1, "kids": [{"n": 2, "kids": []}]}, {"n": 3, "kids": []}]}
    plain = ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined, autoescape=False)
    assert _env().from_string(source).render(**given) == \
        plain.from_string(source).render(**given)


def test_a_budget_gives_several_renders_one_deadline():
    template = _env().from_string("{% for i in range(100000) %}{% endfor %}{{ n }}")
    template.render(n=0)  # well within 0.5 s alone
    with pytest.raises(jinja2.TemplateError, match=TOO_LONG), sandbox.budget(0.5):
        for n in range(10_000):
            template.render(n=n)


def test_the_sandbox_still_keeps_python_internals_out():
    with pytest.raises(jinja2.exceptions.SecurityError):
        _env().from_string("{{ s.__class__.__mro__ }}").render(s="")
    with pytest.raises(jinja2.exceptions.SecurityError):
        _env().from_string("{{ x.append(1) }}").render(x=[])
