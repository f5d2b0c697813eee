"""`DeferredPage`: a tab page built once, the first time its tab is current or it is asked for."""

from PySide6.QtWidgets import QApplication, QLabel, QTabWidget

from workbench.ui.common.deferred import DeferredPage


def _tabs() -> tuple[QTabWidget, list[str], DeferredPage[QLabel], DeferredPage[QLabel]]:
    tabs = QTabWidget()
    tabs.addTab(QLabel("first"), "First")
    built: list[str] = []

    def build(text: str) -> QLabel:
        built.append(text)
        return QLabel(text)

    second = DeferredPage(tabs, "Second", lambda: build("second"))
    third = DeferredPage(tabs, "Third", lambda: build("third"))
    return tabs, built, second, third


def test_a_page_is_built_when_its_tab_first_becomes_current(qapp: QApplication) -> None:
    tabs, built, second, third = _tabs()
    changes: list[int] = []
    tabs.currentChanged.connect(changes.append)
    assert built == [] and second.built is None and third.built is None
    assert [tabs.tabText(i) for i in range(tabs.count())] == ["First", "Second", "Third"]

    tabs.setCurrentIndex(2)

    assert built == ["third"] and second.built is None
    assert tabs.currentWidget() is third.built is third.page()
    assert (tabs.currentIndex(), tabs.tabText(2), changes) == (2, "Third", [2])
    tabs.setCurrentIndex(0)
    tabs.setCurrentIndex(2)
    assert built == ["third"]  # once
    tabs.deleteLater()


def test_a_page_asked_for_is_built_in_its_place_and_the_current_tab_stays(
    qapp: QApplication,
) -> None:
    tabs, built, second, _ = _tabs()
    changes: list[int] = []
    tabs.currentChanged.connect(changes.append)

    page = second.page()

    assert built == ["second"] and page.text() == "second"
    assert tabs.widget(1) is page and tabs.tabText(1) == "Second"
    assert (tabs.currentIndex(), changes) == (0, [])
    tabs.setCurrentIndex(1)
    assert tabs.currentWidget() is page and built == ["second"]
    tabs.deleteLater()
