// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

// A stand-in for USDC / USDT in the EVM rail's tests: a plain ERC-20 with the decimals
// given at deployment (6 on Polygon and Base, 18 for BNB Smart Chain's Binance-Peg
// tokens), an owner who mints, and a blocklist like the one both real tokens have, which
// the tests use to make one call of a batch revert.
contract TestToken {
    string public name;
    string public symbol;
    uint8 public immutable decimals;
    address public immutable owner;
    uint256 public totalSupply;
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;
    mapping(address => bool) public isBlocked;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    constructor(string memory aName, string memory aSymbol, uint8 someDecimals) {
        name = aName;
        symbol = aSymbol;
        decimals = someDecimals;
        owner = msg.sender;
    }

    function mint(address to, uint256 value) external {
        require(msg.sender == owner, "TestToken: not owner");
        totalSupply += value;
        balanceOf[to] += value;
        emit Transfer(address(0), to, value);
    }

    function setBlocked(address who, bool blocked) external {
        require(msg.sender == owner, "TestToken: not owner");
        isBlocked[who] = blocked;
    }

    function transfer(address to, uint256 value) external returns (bool) {
        _move(msg.sender, to, value);
        return true;
    }

    function approve(address spender, uint256 value) external returns (bool) {
        allowance[msg.sender][spender] = value;
        emit Approval(msg.sender, spender, value);
        return true;
    }

    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        require(allowed >= value, "TestToken: allowance");
        if (allowed != type(uint256).max) allowance[from][msg.sender] = allowed - value;
        _move(from, to, value);
        return true;
    }

    function _move(address from, address to, uint256 value) internal {
        require(!isBlocked[from] && !isBlocked[to], "TestToken: blocked");
        require(balanceOf[from] >= value, "TestToken: balance");
        balanceOf[from] -= value;
        balanceOf[to] += value;
        emit Transfer(from, to, value);
    }
}
