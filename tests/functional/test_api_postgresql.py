"""The gabbi API tests on postgresql."""

from gabbi.driver import test_pytest  # noqa: F401  (the test gabbi parametrizes)

from tests.functional import gabbi_tests


def pytest_generate_tests(metafunc):  # type: ignore[no-untyped-def]
    gabbi_tests.generate(metafunc, "postgresql", __name__)
